"""`contend redlock`: the Redlock search's command line (the search: tests/machines/test_redlock.py)."""

from __future__ import annotations

import pytest

from contend.cli import SUBCOMMANDS, main


def test_it_is_listed_in_contend_help(capsys):
    with pytest.raises(SystemExit):
        main(["--help"])
    assert "redlock" in capsys.readouterr().out and "redlock" in SUBCOMMANDS


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
