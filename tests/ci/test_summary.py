"""contend.ci.summary: the GitHub Actions step summary."""

from __future__ import annotations

from contend.ci.summary import ENV_VAR, append_summary, code_block, table


def test_appended_only_when_the_variable_is_set(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert append_summary("## nothing") is False
    path = tmp_path / "summary.md"
    path.write_text("## an earlier step\n")
    monkeypatch.setenv(ENV_VAR, str(path))
    assert append_summary("## contend check") is True
    assert append_summary("## contend stress") is True
    assert path.read_text() == "## an earlier step\n## contend check\n\n## contend stress\n\n"


def test_an_unwritable_summary_warns_and_does_not_fail(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "no" / "such" / "dir" / "summary.md"))
    assert append_summary("x") is False
    assert "not written" in capsys.readouterr().err


def test_cells_and_blocks_are_escaped():
    assert table(["a", "b"], [["x|y", "two\nlines"]]) == "| a | b |\n|---|---|\n| x\\|y | two lines |"
    assert code_block(["```inside", "plain"]) == "```\n` ` `inside\nplain\n```"


def test_a_rich_table_becomes_markdown_without_its_markup():
    from rich.table import Table

    from contend.ci.summary import rich_table

    t = Table(title="rates", caption="same run")
    t.add_column("lock")
    t.add_column("× raw")
    t.add_row("naive [dim](known-bad)[/]", "0.50")
    assert (
        rich_table(t) == "**rates**\n\n| lock | × raw |\n|---|---|\n| naive (known-bad) | 0.50 |\n\nsame run"
    )
