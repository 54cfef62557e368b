"""The async battery: bursts of tasks, stalls and crashes at a round trip, and cancellation at
every round trip of release() and acquire()."""

from __future__ import annotations

import json

import pytest

from contend.cli import main


def check(capsys, *args: str) -> tuple[int, str]:
    code = main(["check", *args, "--check", "cancel"])
    return code, " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    "selector",
    [
        ["--only", "async_token"],
        ["--impl", "tests.fixtures.async_foreign.redispy_lock:make", "--kind", "lock"],
    ],
)
def test_a_release_that_survives_cancellation_passes(capsys, selector):
    code, out = check(capsys, *selector)
    assert code == 0, out
    assert "as expected: 1 correct passed" in out


@pytest.mark.parametrize(
    ("selector", "raised"),
    [
        (["--only", "async_early_clear"], "LockNotOwnedError"),
        # redis-py issue #3847: the release of the releases before PR #3900, copied for this test.
        (["--impl", "tests.fixtures.async_foreign.redispy_lock_3847:make", "--kind", "lock"], "LockError"),
    ],
)
def test_a_token_cleared_before_the_delete_is_awaited_is_caught(capsys, selector, raised):
    code, out = check(capsys, *selector)
    assert code == (0 if selector[0] == "--only" else 1), out  # the catalog's known-bad one: caught
    assert "liveness: crash-liveness" in out
    assert "release() cancelled before its command is sent, at round trip 1 of 1" in out
    assert f"release() again raised {raised}" in out and "the lease is orphaned" in out
    assert "c0 cancelled before its command is sent" in out, "the trace shows where the cancellation landed"


def test_the_state_machine_cancels_releases_too_and_replays_what_it_found(capsys):
    spec = ["--impl", "tests.fixtures.async_foreign.redispy_lock_3847:make", "--kind", "lock"]
    assert main(["check", *spec, "--check", "schedule"]) == 1
    out = capsys.readouterr().out
    flat = " ".join(out.split())
    assert "release() was cancelled before its command is sent" in flat and "2 client(s)" in flat
    replay = next(line.split("--replay ")[1].strip() for line in out.splitlines() if "--replay" in line)
    assert main(["check", *spec, "--replay", replay]) == 1
    assert "the lease is orphaned" in capsys.readouterr().out


def test_an_async_check_then_set_registry_is_caught_by_the_interleaving(capsys):
    assert main(["check", "--only", "async_check_then_set", "--no-shrink"]) == 0  # caught: as expected
    out = " ".join(capsys.readouterr().out.split())
    assert "all as expected: 0 correct passed, 1 known-bad caught" in out


def test_async_bursts_gather_pre_connected_clients(capsys):
    assert (
        main(
            [
                "check",
                "--only",
                "async_token",
                "--only",
                "async_lua",
                "--check",
                "burst",
                "--check",
                "burst-one-name",
            ]
        )
        == 0
    )
    assert main(["check", "--only", "async_check_then_set", "--check", "burst-one-name"]) == 0  # caught
    out = " ".join(capsys.readouterr().out.split())
    assert "tasks registering 'hot-0' at once" in out and "raised RegistrationError" in out


@pytest.mark.parametrize(
    ("factory", "check_name", "words"),
    [
        ("plain_del", "expiry", "its late release freed the successor's lease"),
        ("no_ttl", "crash", "the holder crashed holding the lock"),
    ],
)
def test_stalls_and_crashes_at_a_round_trip_catch_their_mutants(capsys, factory, check_name, words):
    spec = ["--impl", f"tests.fixtures.async_foreign.mutants:{factory}", "--kind", "lock"]
    assert main(["check", *spec, "--check", check_name]) == 1
    assert words in " ".join(capsys.readouterr().out.split())
    assert main(["check", "--only", "async_token", "--check", check_name]) == 0


def test_methods_returning_awaitables_without_async_def_are_refused(capsys, tmp_path, monkeypatch):
    """Plain `def` methods that return coroutines would be judged by the sync battery, where an
    un-awaited coroutine looks granted: refused with what to change instead."""
    (tmp_path / "wrapped_lock.py").write_text(
        "from contend.impl.locks.async_token import AsyncTokenLock\n"
        "class Wrapped:\n"
        "    def __init__(self, client, key, ttl_ms):\n"
        "        self.inner = AsyncTokenLock(client, key, ttl_ms)\n"
        "    def acquire(self, blocking=True, timeout=None):\n"
        "        return self.inner.acquire(blocking, timeout)\n"
        "    def release(self):\n"
        "        return self.inner.release()\n"
        "def make(client, key, ttl_ms):\n"
        "    return Wrapped(client, key, ttl_ms)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    assert main(["check", "--impl", "wrapped_lock:make", "--kind", "lock"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "acquire() returned an awaitable, but is not `async def`" in err


@pytest.mark.slow
def test_an_async_fencing_token_is_found_and_judged(capsys):
    code = main(
        [
            "check",
            "--impl",
            "tests.fixtures.async_foreign.fenced_lock:make",
            "--kind",
            "lock",
            "--check",
            "schedule",
            "--schedule-examples",
            "50",  # the token is found at the first acquire; the correct code's search is the gate's
        ]
    )
    out = " ".join(capsys.readouterr().out.split())
    assert (
        code == 0
        and "fencing token from acquire's return" in out
        and "claims clock-skew-safe, crash-liveness, fencing" in out
    )
    spec = [
        "--impl",
        "tests.fixtures.async_foreign.mutants:two_step_fenced",
        "--kind",
        "lock",
        "--check",
        "schedule",
    ]
    assert main(["check", *spec, "--no-shrink"]) == 1
    assert "safety: fencing" in " ".join(capsys.readouterr().out.split())


def test_async_bad_input_is_checked_as_the_sync_protocol_says(capsys):
    argv = [
        "check",
        "--only",
        "async_token",
        "--only",
        "async_lua",
        "--check",
        "bad-input",
        "--json",
        "-",
        "-q",
    ]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)["implementations"]
    details = [check["detail"] for row in rows for check in row["checks"]]
    assert details == [
        "3 bad arguments refused (ValueError), nothing written",
        "2 bad input(s) refused (ValueError), nothing written",
    ]
    spec = ["--impl", "tests.fixtures.async_foreign.mutants:lax_input", "--kind", "lock"]
    assert main(["check", *spec, "--check", "bad-input"]) == 1
    assert "ttl 0 was accepted" in " ".join(capsys.readouterr().out.split())
