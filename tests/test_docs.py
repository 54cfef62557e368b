"""The manual (README.md and the MkDocs site in docs/): every `contend` command it shows parses as
written, every subcommand has its page, and the README's links lead somewhere.

Broken links and anchors inside docs/ are `mkdocs build --strict`'s business (.ci/run runs it).
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import yaml

from contend.cli import SUBCOMMANDS as COMMANDS
from contend.cli import build_parser
from contend.commands import arguments
from contend.exitcodes import ExitCode

ROOT = Path(__file__).resolve().parent.parent
PAGES = sorted((ROOT / "docs").rglob("*.md"))
MANUAL = [ROOT / "README.md", *PAGES]

#: Fence languages of shell commands other than `sh`: a command in one would escape the parse check.
OTHER_SHELLS = {"bash", "shell", "console", "shell-session", "zsh", "sh-session"}


def fenced_blocks(path: Path) -> list[tuple[str, str]]:
    """(language, text) of each fenced block of a Markdown file, indented ones (in a list) too."""
    blocks, lang, indent, lines = [], None, "", []
    for line in path.read_text().splitlines():
        stripped = line.strip()
        if lang is None:
            if stripped.startswith("```"):
                lang, indent, lines = stripped[3:].strip(), line[: len(line) - len(line.lstrip())], []
        elif stripped == "```":
            blocks.append((lang, "\n".join(lines)))
            lang = None
        else:
            lines.append(line.removeprefix(indent))
    assert lang is None, f"{path}: a fenced block is not closed"
    return blocks


def contend_commands(path: Path) -> list[list[str]]:
    """Every `contend …` command in the file's sh blocks, split as the shell would."""
    commands = []
    for lang, text in fenced_blocks(path):
        if lang != "sh":
            continue
        for line in text.replace("\\\n", " ").splitlines():
            for part in line.split(" #", 1)[0].split(" && "):
                words = shlex.split(part, comments=True)
                if words and (words[0] == "contend" or words[0].endswith("/contend")):
                    commands.append(words)
    return commands


def _name(path: Path) -> str:
    return str(path.relative_to(ROOT))


@pytest.mark.parametrize("path", MANUAL, ids=_name)
def test_every_contend_command_parses_as_written(path, monkeypatch, capsys):
    """Options and values as written exist, and none is a deprecated spelling."""
    monkeypatch.setattr(arguments, "_warned", set())
    for words in contend_commands(path):
        argv = words[1:]
        try:
            build_parser(argv).parse_args(argv)
        except SystemExit as exc:
            if exc.code != 0:  # --help and --version exit 0
                pytest.fail(f"{_name(path)}: {shlex.join(words)}: {capsys.readouterr().err}")
        err = capsys.readouterr().err
        assert err == "", f"{_name(path)}: {shlex.join(words)} uses a deprecated spelling: {err}"


def test_the_manual_shows_commands_of_every_subcommand():
    """The parse check has something to check: every subcommand appears, as written in a page."""
    commands = [words for path in MANUAL for words in contend_commands(path)]
    assert len(commands) >= 50
    assert {words[1] for words in commands} == set(COMMANDS)


@pytest.mark.parametrize("path", MANUAL, ids=_name)
def test_shell_commands_are_in_sh_blocks(path):
    """A command in a block of another language, or in an unmarked one, would not be checked."""
    for lang, text in fenced_blocks(path):
        assert lang not in OTHER_SHELLS, f"{_name(path)}: a ```{lang} block; mark shell commands ```sh"
        if lang != "sh":
            commands = [line for line in text.splitlines() if line.startswith((".venv/bin/", "$ "))]
            assert not commands, f"{_name(path)}: commands outside an sh block: {commands}"


def _nav_pages(nav: list) -> list[str]:
    pages = []
    for entry in nav:
        for value in entry.values() if isinstance(entry, dict) else [entry]:
            pages += _nav_pages(value) if isinstance(value, list) else [value]
    return pages


def test_every_subcommand_has_its_page_in_the_nav():
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    pages = _nav_pages(config["nav"])
    assert sorted(pages) == sorted(_name(p).removeprefix("docs/") for p in PAGES)
    for name in COMMANDS:
        page = ROOT / "docs" / "commands" / f"{name}.md"
        assert f"commands/{name}.md" in pages
        assert page.read_text().startswith(f"# `contend {name}`\n")


def test_the_readme_lists_each_subcommand_as_contend_help_does():
    readme = (ROOT / "README.md").read_text()
    for name, line in COMMANDS.items():
        assert f"| [`contend {name}`](docs/commands/{name}.md) | {line} |" in readme


def test_the_readme_fits_on_a_screen_or_two():
    """About 150 lines; the rest belongs in docs/."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 170


def test_every_relative_link_of_the_readme_leads_to_a_file():
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)\s#]+)(?:#[^)]*)?\)", readme)
    local = [t for t in targets if "://" not in t]
    assert len(local) >= 10
    missing = [t for t in local if not (ROOT / t).exists()]
    assert not missing, f"README.md links to missing files: {missing}"


def test_the_exit_code_table_has_a_row_per_code():
    """docs/ci.md's table of exit codes, the one every page links to, has every code contend uses."""
    text = (ROOT / "docs" / "ci.md").read_text()
    rows = re.findall(r"^\| ([\d /]+) \|", text.split("## Exit codes", 1)[1].split("\n## ", 1)[0], re.M)
    codes = {int(code) for row in rows for code in row.split("/")}
    assert codes == {int(code) for code in ExitCode}


def test_the_quick_tier_the_docs_name_is_a_registered_marker(pytestconfig):
    """docs/TESTING.md tells contributors to run `pytest -m "not slow"`: `slow` must be a marker
    pytest knows (an unknown one would select everything)."""
    text = (ROOT / "docs" / "TESTING.md").read_text()
    assert '.venv/bin/pytest -m "not slow"' in text
    assert any(m.startswith("slow:") for m in pytestconfig.getini("markers"))


def test_the_scoreboard_results_page_is_the_committed_report():
    """docs/scoreboard-results.md is a copy (not an include, which a forge shows as one line)."""
    page = (ROOT / "docs" / "scoreboard-results.md").read_text()
    report = (ROOT / "reports" / "scoreboard" / "report.md").read_text()
    assert page.split("\n", 2)[2] == report, "copy reports/scoreboard/report.md into the page"
