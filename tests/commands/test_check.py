"""`contend check`: exit codes in --help, --impl (passing, racy, protocol errors), the check table."""

from __future__ import annotations

import gc
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time

import pytest

from contend.cli import main

SMALL = [
    "--serial-names",
    "100",
    "--burst-rounds",
    "5",
    "--burst-clients",
    "8",
    "--schedule-examples",
    "10",
    "--no-shrink",
]


def test_check_help_explains_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--redis-url" in out and "known-bad" in out and "Exit 0 when every correct" in out
    assert "safety, liveness or hygiene" in out and "--claim" in out and "--replay" in out


def test_unknown_implementation_name(capsys):
    assert main(["check", "--only", "nosuch"]) == 2
    assert "no implementation called 'nosuch'" in capsys.readouterr().err


@pytest.mark.slow
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


@pytest.mark.slow
def test_racy_user_implementation_fails(capsys):
    """Failed by the checks that force their faults (the burst's real-time race may not happen on
    a loaded machine): a lost reply to its INCR leaves a gap in the ids."""
    code = main(["check", "--impl", "tests.fixtures.user_registry:make_racy", "--kind", "registry", *SMALL])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL" in out and "lost-reply · safety: gap-free" in out


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
    """The README's main job, as a user runs it: a separate process, its own server, a table of
    caught and passed rows. Three registries (two known-bad, one correct); every catalog row's
    verdict is tests/check/test_battery.py's, and CI runs the whole registry family from a wheel."""
    only = ["--only", "naive", "--only", "seed_layout", "--only", "lua"]
    result = subprocess.run(
        [sys.executable, "-m", "contend.cli", "check", *only, *SMALL],
        capture_output=True,
        text=True,
        timeout=300,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith("│")}
    assert set(rows) == {"naive", "seed_layout", "lua"}, rows
    for bad in ("naive", "seed_layout"):
        assert rows[bad].rstrip(" │").endswith("caught"), rows[bad]
    assert rows["lua"].rstrip(" │").endswith("pass"), rows["lua"]
    assert "all as expected: 1 correct passed, 2 known-bad caught" in result.stdout


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
    # Budgets no run reaches: a check cut short while Hypothesis shrinks has no replay line yet.
    unhurried = ["--check-seconds", "600", "--run-seconds", "900"]
    assert main(["check", *spec, "--check", "schedule", *unhurried]) == 1
    out = capsys.readouterr().out
    (command,) = re.findall(r"replay: (contend check .*)", out)
    replay = shlex.split(command)[-1]
    assert shlex.split(command)[2:] == [*spec, "--replay", replay]
    assert main(["check", *spec, "--replay", replay]) == 1
    again = capsys.readouterr().out
    assert "safety: fencing" in again and "not above" in again
    assert "Failing test case" not in out + again and "state = " not in out + again, "Hypothesis's own text"


def test_a_replay_for_another_hypothesis_is_refused(capsys):
    spec = ["--impl", "tests.fixtures.foreign.raising_lock:make", "--kind", "lock"]
    assert main(["check", *spec, "--replay", "1.2.3:AAAA"]) == 2
    assert "Hypothesis 1.2.3" in capsys.readouterr().err
    assert main(["check", *spec, "--replay", "not a replay"]) == 2
    assert "expected VERSION:BLOB" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("blob", "said"),
    [("AXicY2BgZGBkAAAAMgAD", "expected VERSION:BLOB"), ("AAAA", "replays an example of no round trip")],
)
def test_a_replay_that_is_no_recorded_example_is_refused_and_passes_nothing(capsys, blob, said):
    """A blob Hypothesis cannot read is refused before anything starts; one it reads as an empty
    example (no round trip) is refused once replayed, instead of passing on nothing."""
    import hypothesis

    spec = ["--impl", "tests.fixtures.foreign.raising_lock:make", "--kind", "lock"]
    assert main(["check", *spec, "--replay", f"{hypothesis.__version__}:{blob}"]) == 2
    out, err = capsys.readouterr()
    assert said in err and "e.g. " in err and "Traceback" not in err
    assert "pass" not in out and "Failing test case" not in out and "state." not in out


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


@pytest.mark.parametrize(("signum", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_that_lands_in_a_finalizer_still_interrupts_the_run(capsys, monkeypatch, signum, code):
    """The signal is delivered at a chosen point: inside a finalizer that the battery's own
    gc.collect() runs in the main thread after the first check, where its exception would only be
    printed. The run must stop there and exit 128 + the signal, not judge seed_transaction on the
    checks it never reached (it used to exit 1: "seed_transaction (NOT CAUGHT)", no "interrupted")."""
    from contend import interrupt
    from contend.check import battery
    from tests.test_interrupt import SignalsWhenCollected

    real = battery.run_check
    planted = []

    def run_check_then_leave_a_signalling_finalizer(*args, **kwargs):
        result = real(*args, **kwargs)
        if not planted:
            planted.append(SignalsWhenCollected(signum))  # kept in `planted` until the check ends
            planted[0] = None  # now only its cycle holds it: garbage for the battery's gc.collect()
        return result

    monkeypatch.setattr(battery, "run_check", run_check_then_leave_a_signalling_finalizer)
    gc.disable()  # only the battery's gc.collect() (main thread) collects: the chosen point
    try:
        exit_code = main(["check", "--only", "seed_transaction", *SMALL])
    finally:
        gc.enable()
        interrupt.STOP.clear()
    out = " ".join(capsys.readouterr().out.split())
    assert SignalsWhenCollected.last_thread == threading.main_thread().name
    assert exit_code == code, out
    assert f"interrupted ({signal.Signals(signum).name})" in out
    # The headline says the run was cut short; it does not judge what was never checked.
    assert "interrupted after 1 check(s)" in out and "not as expected" not in out
    assert "in finalizers" not in out


#: A signalled run must stop well before a check's own budget would have ended it (30 s for --impl,
#: the catalog's lock family runs for minutes): so far below that, on however busy a machine.
STOPPED_WITHIN = 15.0


def _signalled_run(args: list[str], ready: str) -> tuple[int, float, str]:
    """Run `contend check ARGS` and send SIGTERM as soon as a line of its output contains `ready`
    (a chosen point of the run, not a guess in seconds); (exit code, seconds to exit, output)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "contend.cli", "check", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )
    guard = threading.Timer(300, proc.kill)  # never a hung test, whatever happens
    guard.start()
    try:
        seen = []
        assert proc.stdout is not None
        for line in proc.stdout:
            seen.append(line)
            if ready in line:
                break
        else:
            pytest.fail(f"the run ended before {ready!r}: {''.join(seen)[-2000:]}")
        signalled = time.monotonic()
        proc.send_signal(signal.SIGTERM)
        rest, _ = proc.communicate(timeout=60)
        return proc.returncode, time.monotonic() - signalled, "".join(seen) + rest
    finally:
        guard.cancel()
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _port_closed(out: str) -> bool:
    port = int(re.search(r"127\.0\.0\.1:(\d+)", out).group(1))
    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) != 0


@pytest.mark.slow
def test_sigterm_on_a_hanging_implementation_stops_the_run():
    """SIGTERM while the model check waits in an acquire that never returns (the fixture says when)."""
    code, seconds, out = _signalled_run(
        ["--impl", "tests.fixtures.hanging_lock:make", "--kind", "lock"],
        "hanging_lock: acquire blocks in contend-check-",
    )
    assert code == 143 and seconds < STOPPED_WITHIN, (code, seconds, out)
    assert "interrupted (SIGTERM)" in out and "model: inconclusive (the run was interrupted)" in " ".join(
        out.split()
    )
    assert _port_closed(out), "the embedded server outlived the run"


@pytest.mark.slow
def test_sigterm_during_the_catalog_run_prints_what_it_has():
    """SIGTERM once the first lock's first check has finished (its progress line is out)."""
    code, seconds, out = _signalled_run(["--family", "lock", "--no-shrink"], "setnx_getset · model:")
    assert code == 143 and seconds < STOPPED_WITHIN, (code, seconds, out)
    assert "setnx_getset" in out and "interrupted (SIGTERM)" in out
    assert _port_closed(out)


def test_a_schedule_check_out_of_time_passes_what_it_tried_not_flaky(capsys):
    """The budget ends the search between two examples: a correct lock has passed what was
    tried. (Hypothesis used to report the stop as FlakyStrategyDefinition: inconclusive, exit 3.)
    The search wraps up at three quarters of the budget; 6 s leaves the example under way 1.5 s
    to end before the hard stop, on a busy machine too (with 2 s, one at load 13 did not)."""
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
            "6",
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


@pytest.mark.slow
def test_on_a_server_that_keeps_its_own_time_the_schedule_check_says_what_it_did_not_judge(
    capsys, contend_private_server
):
    """A server contend did not start for the run (here one started without a clock) keeps real
    time: nothing that needs a lease to run out is judged, and the verdict says so."""
    code = main(
        [
            "check",
            "--redis-url",
            contend_private_server.url,
            "--only",
            "token",
            "--check",
            "schedule",
            "--schedule-examples",
            "10",
        ]
    )
    out = " ".join(capsys.readouterr().out.split())
    assert code == 0
    assert "token · schedule: not judged on a server contend did not start" in out
    assert "crash-liveness (leave out --redis-url to judge them)" in out
