"""`contend redlock`: the Redlock search's command line (the search: tests/machines/test_redlock.py)."""

from __future__ import annotations

import pytest

from contend.cli import SUBCOMMANDS, main
from contend.commands import redlock


def test_its_line_in_contend_help_is_its_modules():
    assert SUBCOMMANDS["redlock"] == redlock.SUMMARY


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--fenced", "--fence", "none"], "--fenced is --fence resource; give one or the other"),
        (["--runs", "0"], "must be a whole number > 0"),
        (["--fence", "nothing"], "invalid choice"),
    ],
)
def test_a_refused_option_is_one_line_and_exit_2(argv, message, capsys):
    try:
        code = main(["redlock", *argv])
    except SystemExit as exc:  # argparse's own refusals
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
