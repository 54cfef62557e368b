"""One vocabulary: renamed options keep their old spelling for a release, with a warning."""

from __future__ import annotations

import pytest

from contend.cli import build_parser
from contend.commands import arguments


@pytest.fixture(autouse=True)
def _fresh_warnings(monkeypatch):
    monkeypatch.setattr(arguments, "_warned", set())


@pytest.mark.parametrize(
    ("old", "new", "dest", "value"),
    [
        (["stress", "--procs", "3"], ["stress", "--processes", "3"], "processes", 3),
        (["stress", "--check-timeout", "5"], ["stress", "--search-seconds", "5"], "search_seconds", 5.0),
        (["history", "check", "f", "--model", "kv", "--timeout", "2"], None, "search_seconds", 2.0),
        (["load", "--seconds", "3"], ["load", "--duration", "3"], "duration", 3),
        (
            ["load", "--ceiling-seconds", "0.5"],
            ["load", "--ceiling-duration", "0.5"],
            "ceiling_duration",
            0.5,
        ),
        (["bench", "locks", "--seconds", "0.5"], ["bench", "lock", "--duration", "0.5"], "duration", 0.5),
        (
            ["check", "--family", "single_flight"],
            ["check", "--family", "single-flight"],
            "family",
            ["single_flight"],
        ),
    ],
)
def test_old_spellings_still_work_and_warn(capsys, old, new, dest, value):
    args = build_parser(old).parse_args(old)
    assert getattr(args, dest) == value
    err = capsys.readouterr().err
    assert "is deprecated, use" in err and err.count("\n") >= 1
    if new is not None:
        again = build_parser(new).parse_args(new)
        assert getattr(again, dest) == value
        assert capsys.readouterr().err == "", "the new spelling is silent"


@pytest.mark.parametrize("command", ["check", "stress", "load", "bench", "scoreboard", "server", "report"])
def test_help_shows_the_new_names_and_the_exit_codes_only(capsys, command):
    argv = [command, "--help"]
    with pytest.raises(SystemExit):
        build_parser(argv).parse_args(argv)
    text = capsys.readouterr().out
    for old in (
        "--procs ",
        "--check-timeout",
        "--seconds ",
        "--ceiling-seconds",
        "--key-namespace",
        "single_flight",
    ):
        assert old not in text
    assert "exit codes (the same in every command):" in text and "  3  nothing failed" in text


def test_an_unknown_family_names_the_choices(capsys):
    argv = ["check", "--family", "locks"]
    with pytest.raises(SystemExit):
        build_parser(argv).parse_args(argv)
    assert (
        "unknown family 'locks'; choose one of lock, registry, semaphore, single-flight"
        in capsys.readouterr().err
    )
