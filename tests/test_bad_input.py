"""No traceback for any input: every subcommand against a table of bad inputs.

Each case ends with a clear message and a documented exit code (contend.exitcodes: 2 for bad
input, 130/143 when interrupted), never a Python traceback and never exit 0. The commands run
in this process (contend.cli.main), except the signals, which go to a `contend` process.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contend.cli import main
from tests.fixtures.not_redis import http_400_server

ROOT = Path(__file__).resolve().parents[1]
FAULTS = "tests.fixtures.user_lock_faults"
#: What each kind of bad factory is, in contend's words: (spec, the words of the one line).
FACTORIES = {
    "raises": (f"{FAULTS}:raising_factory", "boom in the factory"),
    "returns None": (f"{FAULTS}:returns_none", "None"),
    "blocks": (f"{FAULTS}:blocking_factory", "did not return"),
}
WRONG_KIND = "tests.fixtures.user_registry:make"  # a registry, given as a lock
URL = "{url}"  # the embedded server of the test session
NOT_REDIS = "{not_redis}"
#: A progress line of a finished check ("contend check · 1/11 · 0.7 s · token · model: pass (0.1 s)").
FINISHED = re.compile(
    r"· \d+/\d+ · .*: (pass|fail|caught|inconclusive)"
)  # an HTTP server that answers 400 and keeps the connection open


def _impl_cases() -> list[tuple[str, list[str], str]]:
    cases = []
    for command, extra in (
        ("check", ["--run-seconds", "20"]),
        ("stress", ["--duration", "1", "--processes", "1"]),
        (
            "load",
            ["--users", "1", "--hot-keys", "1", "--duration", "1", "--processes", "1", "--out", "{tmp}/load"],
        ),
    ):
        kind = "lock"
        for name, (spec, words) in FACTORIES.items():
            cases.append(
                (
                    f"{command}: a factory that {name}",
                    [command, "--redis-url", URL, "--impl", spec, "--kind", kind, *extra],
                    words,
                )
            )
        cases.append(
            (
                f"{command}: a wrong --kind",
                [command, "--redis-url", URL, "--impl", WRONG_KIND, "--kind", kind, *extra],
                "lock factory is called as",
            )
        )
    return cases


CASES: list[tuple[str, list[str], str]] = [
    *_impl_cases(),
    *(
        (
            f"{command}: a URL to a server that is not Redis",
            [command, "--redis-url", NOT_REDIS, *extra],
            "is not Redis",
        )
        for command, extra in (
            ("check", ["--only", "token", "--check", "model"]),
            ("stress", ["--only", "token", "--duration", "1"]),
            ("load", ["--users", "1", "--hot-keys", "1", "--duration", "1", "--out", "{tmp}/load"]),
            ("bench", ["registry", "--duration", "1"]),
            ("scoreboard", ["--quick", "--no-write"]),
        )
    ),
    (
        "history check: a directory for a file",
        ["history", "check", "{tmp}", "--model", "registry"],
        "is a directory",
    ),
    (
        "history check: a file that is not a history",
        ["history", "check", "{garbage}", "--model", "registry"],
        "not UTF-8 text",
    ),
    (
        "history check: a file that does not exist",
        ["history", "check", "{tmp}/none.jsonl", "--model", "registry"],
        "no such file",
    ),
    ("report: a directory that holds no sweep", ["report", "{tmp}"], "sweep"),
    ("report: a sweep.json that is not JSON", ["report", "{bad_sweep}"], "not a sweep description"),
    (
        "check: a --json file that cannot be written",
        ["check", "--only", "token", "--json", "/proc/contend.json"],
        "--json",
    ),
    (
        "server: a --redis-server that is not there",
        ["server", "--redis-server", "{tmp}/no-redis-server"],
        "no-redis-server",
    ),
    ("hunt: an implementation that is not known-bad", ["hunt", "--only", "lua"], "is not known-bad"),
    (
        "check: a transaction claiming what a bank cannot",
        [
            "check",
            "--impl",
            "tests.fixtures.foreign.hash_bank:make",
            "--kind",
            "transaction",
            "--claim",
            "fifo",
        ],
        "a transaction can claim applies-once, consistent-audit, serializable",
    ),
    (
        "check: a lock given as a transaction",
        ["check", "--impl", "tests.fixtures.foreign.raising_lock:make", "--kind", "transaction"],
        "a transaction factory is called as",
    ),
    (
        "check: a queue claiming what a queue cannot",
        ["check", "--impl", "tests.fixtures.foreign.lua_queue:make", "--kind", "queue", "--claim", "fencing"],
        "a queue can claim ack-final, fifo, no-double-delivery, no-loss, no-phantom",
    ),
    (
        "check: a lock given as a queue",
        ["check", "--impl", "tests.fixtures.foreign.raising_lock:make", "--kind", "queue"],
        "a queue factory is called as factory(client: redis.Redis, name: str)",
    ),
    (
        "check: an empty operation list",
        [
            "check",
            "--impl",
            "tests.fixtures.operations.bad_inputs:make",
            "--kind",
            "operations",
            "--operations",
            "tests.fixtures.operations.bad_inputs:EMPTY",
        ],
        "is empty: name at least one operation",
    ),
    (
        "check: an operation that names no method",
        [
            "check",
            "--impl",
            "tests.fixtures.operations.bad_inputs:make",
            "--kind",
            "operations",
            "--operations",
            "tests.fixtures.operations.bad_inputs:MISSING",
        ],
        "operation 'refund' names nothing",
    ),
    (
        "check: a strategy that cannot draw",
        [
            "check",
            "--impl",
            "tests.fixtures.operations.bad_inputs:make",
            "--kind",
            "operations",
            "--operations",
            "tests.fixtures.operations.bad_inputs:CANNOT_DRAW",
        ],
        "cannot draw",
    ),
    (
        "check: a rate limiter claiming what a limiter cannot",
        [
            "check",
            "--impl",
            "tests.fixtures.foreign.list_log:make",
            "--kind",
            "rate-limiter",
            "--claim",
            "fifo",
        ],
        "a rate-limiter can claim clock-skew-safe, fixed-window, no-false-refusal, no-stuck-key, sliding-log, "
        "token-bucket",
    ),
    (
        "check: a lock given as a rate limiter",
        ["check", "--impl", "tests.fixtures.foreign.raising_lock:make", "--kind", "rate-limiter"],
        "a rate-limiter factory is called as factory(client: redis.Redis, key: str, limit: int, window_ms: int)",
    ),
    (
        "stress: a rate limiter",
        [
            "stress",
            "--impl",
            "tests.fixtures.foreign.list_log:make",
            "--kind",
            "rate-limiter",
            "--duration",
            "1",
        ],
        "stress runs the registry, lock and transaction families; check a rate-limiter with `contend check",
    ),
    (
        "stress: a queue",
        ["stress", "--impl", "tests.fixtures.foreign.lua_queue:make", "--kind", "queue", "--duration", "1"],
        "stress runs the registry, lock and transaction families; check a queue with `contend check",
    ),
    (
        "stress: your own primitive",
        [
            "stress",
            "--impl",
            "tests.fixtures.operations.stock_script:make",
            "--kind",
            "operations",
            "--duration",
            "1",
        ],
        "stress runs the registry, lock and transaction families; check your own primitive with `contend check",
    ),
    (
        "load: your own primitive",
        ["load", "--impl", "tests.fixtures.operations.stock_script:make", "--kind", "operations"],
        "not your own primitive; check it with contend check --impl",
    ),
    (
        "load: a transfer strategy that does not exist",
        ["load", "--workload", "transfer", "--strategy", "lock-first", "--out", "{tmp}/load"],
        "none of --strategy lock-first applies to the transfer workload",
    ),
    (
        "hunt: a URL to a server that is not Redis",
        ["hunt", "--redis-url", NOT_REDIS, "--only", "naive", "--runs", "1"],
        "is not Redis",
    ),
    (
        "sentinel: a --redis-server that is not there",
        ["sentinel", "--redis-server", "{tmp}/no-redis-server"],
        "no-redis-server",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "argv", "words"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_one_message_and_a_documented_exit_code(
    name, argv, words, contend_target, tmp_path, capsys, monkeypatch
):
    monkeypatch.chdir(ROOT)  # --impl imports from the current directory
    if "blocks" in name:  # a factory that never returns is given up on after 1 s, not 5
        monkeypatch.setattr("contend.subject.probe.PROBE_SECONDS", 1.0)
    garbage = tmp_path / "garbage.jsonl"
    garbage.write_bytes(b"\x00\xff not json at all\n")
    bad_sweep = tmp_path / "sweep"
    bad_sweep.mkdir()
    (bad_sweep / "sweep.json").write_text("{ not json")
    with http_400_server() as not_redis:
        values = {
            "url": contend_target.url,
            "not_redis": not_redis,
            "tmp": str(tmp_path),
            "garbage": str(garbage),
            "bad_sweep": str(bad_sweep),
        }
        args = [a.format(**values) for a in argv]
        try:
            code = main(args)
        except SystemExit as exc:  # argparse's own refusals
            code = exc.code
    printed = capsys.readouterr()
    text = printed.out + printed.err
    assert "Traceback" not in text, text[-3000:]
    assert code == 2, (code, text[-3000:])
    assert words.lower() in text.lower(), text[-3000:]


def _contend(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", "import sys; from contend.cli import main; sys.exit(main())", *args],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_after_the_first_result_stops_the_run_with_its_code(sig, code, contend_target):
    """The signal comes once the first check has finished (the moment chosen by reading the
    progress lines), in the middle of the run."""
    run = _contend("check", "--redis-url", contend_target.url, "--family", "lock")
    try:
        assert run.stderr is not None
        deadline = time.monotonic() + 120
        for line in run.stderr:
            if FINISHED.search(line) or time.monotonic() > deadline:
                break
        run.send_signal(sig)
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == code, (out[-2000:], err[-2000:])
    assert "Traceback" not in out + err
    assert "interrupted" in out + err


def _until(run: subprocess.Popen[str], pattern: re.Pattern[str]) -> None:
    """Read the run's stderr up to the first line that matches (or two minutes)."""
    assert run.stderr is not None
    deadline = time.monotonic() + 120
    for line in run.stderr:
        if pattern.search(line) or time.monotonic() > deadline:
            return


@pytest.mark.slow
@pytest.mark.parametrize(
    ("argv", "started"),
    [
        (
            ["-m", "contend.cli", "hunt", "--only", "naive", "--runs", "50"],
            re.compile(r"naive seed \d+: caught"),
        ),
        (["-m", "contend.cli", "redlock", "--runs", "50"], re.compile(r"masters .* up; searching")),
    ],
    ids=["contend hunt", "contend redlock"],
)
def test_a_tool_interrupted_mid_run_says_so_with_its_code(argv, started):
    """SIGINT once the tool is under way (a seed done, or the masters up): exit 130, no traceback."""
    run = subprocess.Popen(
        [sys.executable, *argv], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"},
    )  # fmt: skip
    try:
        _until(run, started)
        run.send_signal(signal.SIGINT)
        out, err = run.communicate(timeout=60)
    finally:
        if run.poll() is None:
            run.kill()
            run.wait()
    assert run.returncode == 130, (out[-2000:], err[-2000:])
    assert "Traceback" not in out + err and "interrupted" in out + err
