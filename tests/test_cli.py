"""The `contend` command line: help, refused numbers and namespaces."""

from __future__ import annotations

import pytest

from contend.cli import main

SMALL = ["--serial-names", "100", "--burst-rounds", "5", "--schedule-examples", "10", "--no-shrink"]


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in ("check", "bench", "server"):
        assert command in out


def test_bad_numbers_are_refused(capsys):
    with pytest.raises(SystemExit) as info:
        main(["check", "--serial-names", "0"])
    assert info.value.code == 2
    assert "must be > 0" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["check", "stress", "load"])
@pytest.mark.parametrize("prefix", ["", "  "])
def test_blank_namespace_is_refused(command, prefix, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--namespace", prefix])
    assert info.value.code == 2
    assert "--namespace: must be a non-empty key prefix" in capsys.readouterr().err
