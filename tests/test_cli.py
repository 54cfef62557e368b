"""The `contend` command line: help, refused numbers and namespaces."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from contend.cli import SUBCOMMANDS as COMMANDS
from contend.cli import main

DATA = Path(__file__).resolve().parent / "data"

SMALL = ["--serial-names", "100", "--burst-rounds", "5", "--schedule-examples", "10", "--no-shrink"]


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in COMMANDS:
        assert command in out


def test_bad_numbers_are_refused(capsys):
    with pytest.raises(SystemExit) as info:
        main(["check", "--serial-names", "0"])
    assert info.value.code == 2
    assert "must be a whole number > 0" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["check", "stress", "load"])
@pytest.mark.parametrize("prefix", ["", "  "])
def test_blank_namespace_is_refused(command, prefix, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--namespace", prefix])
    assert info.value.code == 2
    assert "--namespace: must be a non-empty key prefix" in capsys.readouterr().err


def test_a_command_imports_only_what_it_needs():
    """`contend history check` starts without redis-py, Hypothesis, Locust or matplotlib (a batch
    of histories in CI pays start-up once per process, and that start-up was most of it)."""
    code = (
        "import sys\n"
        "from contend.cli import main\n"
        f"assert main(['history', 'check', {str(DATA / 'etcd_002.log')!r}, '--model', 'cas-register']) == 0\n"
        "print(sorted(m for m in ('redis', 'hypothesis', 'locust', 'matplotlib') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "[]"


@pytest.mark.parametrize("command", ["check", "stress", "bench", "scoreboard", "load"])
def test_an_error_with_brackets_is_plain_text_not_markup(command, capsys):
    """The URL hint has [brackets] (`redis://[[user]:password@]host[:port][/db]`): printed as written,
    never read as Rich markup (which once ended in a MarkupError traceback)."""
    argv = [command, "--redis-url", "http://127.0.0.1:6379"]
    if command == "bench":
        argv.insert(1, "lock")
    if command == "stress":
        argv += ["--only", "lua"]
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "expected redis://[[user]:password@]host[:port][/db]" in " ".join(err.split())
    assert "Traceback" not in err and "MarkupError" not in err


def test_family_or_only_with_impl_is_refused_not_ignored(capsys):
    code = main(["check", "--impl", "tests.fixtures.user_registry:make", "--family", "lock"])
    assert code == 2
    assert "--family chooses catalog implementations and --impl checks yours" in capsys.readouterr().err


def test_a_command_whose_interrupt_never_reached_it_still_exits_128_plus_the_signal(monkeypatch, capsys):
    """A signal handled inside a finalizer raises nothing there (Python would only print it), so a
    command may return as if it finished: main() still exits 130 and says it was interrupted."""
    import gc
    import signal

    import contend.commands.history
    from contend import interrupt
    from tests.test_interrupt import SignalsWhenCollected

    def run(args, out, err):
        SignalsWhenCollected(signal.SIGINT)
        gc.collect()  # its finalizer runs here, in the main thread, and the signal lands in it
        return 0

    monkeypatch.setattr(contend.commands.history, "run", run)
    try:
        assert main(["history", "check", "tests/data/kv_ok.edn", "--model", "kv"]) == 130
    finally:
        interrupt.STOP.clear()
    assert "interrupted (SIGINT)" in capsys.readouterr().err
