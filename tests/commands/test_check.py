"""`contend check`: exit codes in --help, --impl (passing, racy, protocol errors), the check table."""

from __future__ import annotations

import json
import re
import shlex
import signal
import socket
import subprocess
import sys
import time

import pytest

from contend.cli import main

SMALL = ["--serial-names", "100", "--burst-rounds", "5", "--schedule-examples", "10", "--no-shrink"]


def test_check_help_explains_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--redis-url" in out and "known-bad" in out and "Exit 0 when every correct" in out
    assert "safety, liveness or hygiene" in out and "--claim" in out and "--replay" in out


def test_unknown_implementation_name(capsys):
    assert main(["check", "--only", "nosuch"]) == 2
    assert "no implementation called 'nosuch'" in capsys.readouterr().err


def test_user_implementation_passes(capsys, tmp_path):
    report = tmp_path / "out.json"
    code = main(
        [
            "check",
            "--impl",
            "tests.fixtures.user_registry:make",
            "--kind",
            "registry",
            "--json",
            str(report),
            *SMALL,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads(report.read_text())
    assert data["command"] == "check" and data["verdict"] == "as-expected" and data["exit_code"] == 0
    (row,) = data["implementations"]
    assert row["implementation"] == "tests.fixtures.user_registry:make"
    assert row["verdict"] == "pass"
    assert {c["check"] for c in row["checks"]} >= {"model", "serial", "burst-one-name", "bad-input"}


def test_racy_user_implementation_fails(capsys):
    code = main(["check", "--impl", "tests.fixtures.user_registry:make_racy", "--kind", "registry", *SMALL])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL" in out and "burst-one-name" in out and "Failed to register" in out


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tests.fixtures.user_registry:broken", "without lookup(name) -> int | None"),
        ("tests.fixtures.user_registry:wrong_arity", "factory is called as factory(client"),
        ("tests.fixtures.user_registry:NOT_CALLABLE", "not a callable factory"),
        ("tests.fixtures.user_registry:missing", "has no attribute 'missing'"),
        ("no_such_module_here:make", "cannot import 'no_such_module_here'"),
        ("just-a-name", "expected package.module:factory"),
    ],
)
def test_user_implementation_protocol_errors(spec, message, capsys):
    assert main(["check", "--impl", spec, "--kind", "registry"]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    if spec != "tests.fixtures.user_registry:broken":  # only the object's methods need a server to probe
        assert "embedded Redis" not in captured.out, "a bad --impl should fail before a server starts"


@pytest.mark.slow
def test_contend_check_registry_table():
    """The README's main job, as a user runs it: a separate process, its own server."""
    result = subprocess.run(
        [sys.executable, "-m", "contend.cli", "check", "--family", "registry", *SMALL],
        capture_output=True,
        text=True,
        timeout=300,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith("│")}
    for bad in ("naive", "seed_transaction", "seed_layout"):
        assert rows[bad].rstrip(" │").endswith("caught"), rows[bad]
    for good in ("watch", "lock_first", "lua", "seed_layout_lua"):
        assert rows[good].rstrip(" │").endswith("pass"), rows[good]
    assert "all as expected" in result.stdout


def test_an_unsupported_redis_py_is_refused_before_anything_starts(monkeypatch, capsys):
    import redis

    monkeypatch.setattr(redis, "__version__", "9.0.0")
    assert main(["check", "--family", "registry"]) == 2
    err = capsys.readouterr().err
    assert "redis-py 9.0.0" in err and "pip install 'redis>=" in err and "Traceback" not in err


def test_claims_are_validated_before_anything_starts(capsys):
    assert (
        main(
            [
                "check",
                "--impl",
                "tests.fixtures.foreign.raising_lock:make",
                "--kind",
                "lock",
                "--claim",
                "nope",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "--claim 'nope'" in err and "mutual-exclusion" in err
    assert main(["check", "--claim", "fifo"]) == 2
    assert "go with --impl" in capsys.readouterr().err


def test_the_claims_used_are_printed_and_can_be_changed(capsys):
    code = main(
        [
            "check", "--impl", "tests.fixtures.foreign.return_fenced_lock:make", "--kind", "lock",
            "--check", "bad-input", "--no-claim", "clock-skew-safe",
        ]
    )  # fmt: skip
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert "claims crash-liveness, fencing, mutual-exclusion, safe-release" in out
    assert "fencing: it exposes a token; --no-claim clock-skew-safe" in out
    assert "fencing token from acquire's return" in out


@pytest.mark.slow
def test_a_schedule_finding_replays_with_one_command(capsys):
    spec = ["--impl", "tests.fixtures.foreign.clock_fenced_lock:make", "--kind", "lock"]
    assert main(["check", *spec, "--check", "schedule"]) == 1
    out = capsys.readouterr().out
    (command,) = re.findall(r"replay: (contend check .*)", out)
    replay = shlex.split(command)[-1]
    assert shlex.split(command)[2:] == [*spec, "--replay", replay]
    assert main(["check", *spec, "--replay", replay]) == 1
    again = capsys.readouterr().out
    assert "safety: fencing" in again and "not above" in again


def test_a_replay_for_another_hypothesis_is_refused(capsys):
    spec = ["--impl", "tests.fixtures.foreign.raising_lock:make", "--kind", "lock"]
    assert main(["check", *spec, "--replay", "1.2.3:AAAA"]) == 2
    assert "Hypothesis 1.2.3" in capsys.readouterr().err
    assert main(["check", *spec, "--replay", "not a replay"]) == 2
    assert "expected VERSION:BLOB" in capsys.readouterr().err


@pytest.mark.slow
def test_a_check_past_its_budget_is_inconclusive_and_the_run_goes_on(capsys):
    code = main(
        [
            "check", "--impl", "tests.fixtures.hanging_lock:make", "--kind", "lock",
            "--check", "model", "--check", "bad-input", "--check-seconds", "1",
        ]
    )  # fmt: skip
    out = " ".join(capsys.readouterr().out.split())
    assert code == 3
    assert "model: inconclusive (timed out after 1 s)" in out
    assert "inconclusive" in out


def _signalled_run(args: list[str], after: float) -> tuple[int, float, str]:
    """Run `contend check ARGS`, send SIGTERM `after` seconds in; (exit code, seconds to exit, output)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "contend.cli", "check", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    time.sleep(after)
    signalled = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    return proc.returncode, time.monotonic() - signalled, out


def _port_closed(out: str) -> bool:
    port = int(re.search(r"127\.0\.0\.1:(\d+)", out).group(1))
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.slow
def test_sigterm_on_a_hanging_implementation_stops_within_five_seconds():
    code, seconds, out = _signalled_run(["--impl", "tests.fixtures.hanging_lock:make", "--kind", "lock"], 8)
    assert code == 143 and seconds < 5, (code, seconds, out)
    assert "interrupted (SIGTERM)" in out and "model: inconclusive (the run was interrupted)" in " ".join(
        out.split()
    )
    assert _port_closed(out), "the embedded server outlived the run"


@pytest.mark.slow
def test_sigterm_during_the_catalog_run_prints_what_it_has():
    code, seconds, out = _signalled_run(["--family", "lock", "--no-shrink"], 15)
    assert code == 143 and seconds < 5, (code, seconds, out)
    assert "setnx_getset" in out and "interrupted (SIGTERM)" in out
    assert _port_closed(out)


def test_a_schedule_check_out_of_time_passes_what_it_tried_not_flaky(capsys):
    """The budget ends the search between two examples: a correct lock has passed what was
    tried. (Hypothesis used to report the stop as FlakyStrategyDefinition: inconclusive, exit 3.)"""
    code = main(
        [
            "check",
            "--only",
            "token",
            "--check",
            "schedule",
            "--schedule-examples",
            "5000",
            "--check-seconds",
            "2",
            "-v",
        ]
    )
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0, out
    assert "before the check's time budget ended the search, short of the 5000 examples asked for" in out


def test_impl_needs_its_kind(capsys):
    """Never a silent default: a lock factory is not checked as a registry."""
    assert main(["check", "--impl", "tests.fixtures.foreign.raising_lock:make"]) == 2
    err = capsys.readouterr().err
    assert "needs --kind: the protocol it follows" in err and "Traceback" not in err


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tests.fixtures.user_lock_faults:raising_factory", "the lock factory raised RuntimeError"),
        ("tests.fixtures.user_lock_faults:returns_none", "returned a NoneType without acquire"),
    ],
)
def test_a_factory_that_raises_or_returns_nothing_is_one_line_and_exit_2(spec, message, capsys, tmp_path):
    report = tmp_path / "r.json"
    assert main(["check", "--impl", spec, "--kind", "lock", "--json", str(report)]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert json.loads(report.read_text())["exit_code"] == 2


def test_an_acquire_that_raises_in_the_probe_ends_as_rows_with_evidence(capsys, tmp_path):
    report = tmp_path / "r.json"
    spec = "tests.fixtures.user_lock_faults:acquire_raises"
    code = main(["check", "--impl", spec, "--kind", "lock", "--check", "crash", "--json", str(report)])
    out = capsys.readouterr().out
    assert code == 1 and "Traceback" not in out
    assert "acquire(blocking=False) on a free lock raised ValueError: acquire exploded" in out
    (row,) = json.loads(report.read_text())["implementations"]
    assert row["verdict"].startswith("FAIL")
