"""contend.testing: a user's own pytest suite checks a factory as `contend check --impl` does.

The same verdicts and the same evidence as the command; a failure is an AssertionError, an
inconclusive check too; bad arguments are refused before a server is used; the family state
machines can be pointed at a factory and run. Real Redis (the plugin's server), small budgets.
"""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from contend.check.framework import INCONCLUSIVE, PASS
from contend.cli import main
from contend.impl.catalog import MUTUAL_EXCLUSION
from contend.machines import LOCK_CLAIMS, LockMachine, PropertyViolated
from contend.subject.protocols import ProtocolError
from contend.testing import (
    ContendCheckFailed,
    check,
    check_lock,
    check_queue,
    check_rate_limiter,
    check_registry,
    check_semaphore,
    check_single_flight,
    check_transaction,
    machine_for,
    run_machine,
)
from tests.fixtures.foreign import (
    check_then_set_lock,
    flight,
    hash_bank,
    list_log,
    lua_queue,
    lua_registry,
    raising_lock,
    zset_semaphore,
)

ROOT = Path(__file__).resolve().parent.parent
MUTANT = "tests.fixtures.foreign.check_then_set_lock:make"
#: Enough interleavings for the schedule check to catch check_then_set_lock (it needs about 25).
EXAMPLES = 30
#: Real-time budgets (s) no check here reaches: these tests read the evidence and its replay line,
#: which a check cut short while Hypothesis shrinks does not have yet (a busy machine once spent
#: the 30 s default there).
UNHURRIED = {"check_seconds": 600.0, "run_seconds": 900.0}


@pytest.mark.slow
def test_a_correct_lock_passes_and_its_rows_are_returned(contend_target):
    rows = check_lock(raising_lock.make, contend_target, schedule_examples=10)
    (row,) = rows
    assert row.verdict == "pass"
    assert row.subject.name == "tests.fixtures.foreign.raising_lock:make"
    assert {r.check for r in row.results} >= {"model", "burst", "expiry", "crash", "bad-input", "schedule"}
    assert all(r.status == PASS for r in row.results)


@pytest.mark.slow
def test_each_kind_has_its_wrapper(contend_target):
    """One quick check per family, so each wrapper reaches its own battery."""
    for wrapper, factory, family in [
        (check_registry, lua_registry.make, "registry"),
        (check_semaphore, zset_semaphore.make, "semaphore"),
        (check_single_flight, flight.make, "single_flight"),
        (check_transaction, hash_bank.make, "transaction"),
        (check_queue, lua_queue.make, "queue"),
        (check_rate_limiter, list_log.make, "rate_limiter"),
    ]:
        (row,) = wrapper(factory, contend_target, checks=["bad-input"])
        assert (row.subject.family, row.verdict, [r.check for r in row.results]) == (
            family,
            "pass",
            ["bad-input"],
        )


def test_kind_takes_the_command_lines_spelling_too(contend_target):
    (row,) = check(
        "tests.fixtures.foreign.flight:make", contend_target, kind="single-flight", checks=["bad-input"]
    )
    assert row.subject.family == "single_flight" and row.verdict == "pass"


def _normalised(text: str) -> list[str]:
    """Evidence lines without what differs between two runs: namespaces (the run's, and the
    example's number in the process) and random tokens."""
    # A key, whole or cut in the middle to keep its end: the namespaces differ, so the cut does.
    text = re.sub(r"contend:\S*:(\w+)\b", r"contend:NS…:\1", text)
    text = re.sub(r"\b[0-9a-f]{32}\b", "TOKEN", text)
    return [line.rstrip() for line in text.splitlines() if line.strip()]


@pytest.mark.slow
def test_a_mutant_fails_with_the_evidence_the_command_prints(contend_target, capsys):
    with pytest.raises(ContendCheckFailed) as info:
        check_lock(
            check_then_set_lock.make,
            contend_target,
            checks=["schedule"],
            schedule_examples=EXAMPLES,
            shrink=False,  # the same example either way; shrinking it twice is a minute on a busy machine
            **UNHURRIED,
        )
    failure = info.value
    assert isinstance(failure, AssertionError)
    (row,) = failure.rows
    (result,) = row.failed
    assert result.prop == MUTUAL_EXCLUSION
    message = str(failure)
    assert f"{MUTANT} · schedule · safety: mutual-exclusion" in message
    assert "client(s)" in message and "EXISTS" in message
    assert f"replay: contend check --impl {MUTANT} --kind lock --replay " in message

    code = main(
        [
            "check",
            "--impl",
            MUTANT,
            "--kind",
            "lock",
            "--check",
            "schedule",
            "--schedule-examples",
            str(EXAMPLES),
            "--no-shrink",
            "--check-seconds",
            "600",
            "--run-seconds",
            "900",
            "--redis-url",
            contend_target.url,
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    printed = _normalised(out.split("\nevidence\n", 1)[1])
    evidence = _normalised(message.split("\nevidence\n", 1)[1])
    assert evidence == printed[: len(evidence)]
    assert "not as expected" in printed[len(evidence)]


@pytest.mark.slow
def test_a_factory_object_that_cannot_be_imported_gets_a_replay_call(contend_target):
    def make(client, key, ttl_ms):
        return check_then_set_lock.make(client, key, ttl_ms)

    with pytest.raises(ContendCheckFailed) as info:
        check_lock(
            make, contend_target, checks=["schedule"], schedule_examples=EXAMPLES, shrink=False, **UNHURRIED
        )
    message = str(info.value)
    assert (
        "tests.test_testing:test_a_factory_object_that_cannot_be_imported_gets_a_replay_call.<locals>.make"
        in message
    )
    (call,) = re.findall(r"replay: (check_lock\(make, target, replay='([^']+)'\))", message)
    assert "contend check --impl" not in message

    started = time.perf_counter()
    with pytest.raises(ContendCheckFailed) as again:
        check_lock(make, contend_target, replay=call[1])
    (row,) = again.value.rows
    assert [(r.check, r.prop) for r in row.failed] == [("schedule", MUTUAL_EXCLUSION)]
    assert time.perf_counter() - started < 10  # one example, not a search


def test_claims_are_added_and_dropped_as_on_the_command_line(contend_target):
    (row,) = check_lock(raising_lock.make, contend_target, no_claim=["clock-skew-safe"], checks=["bad-input"])
    assert "clock-skew-safe" not in row.subject.claims
    assert row.subject.claim_changes == ("--no-claim clock-skew-safe",)


def _slow_lock(client, key, ttl_ms):
    """A correct lock whose acquire first sleeps a real second (longer than the budget below)."""
    lock = raising_lock.make(client, key, ttl_ms)
    acquire = lock.acquire

    def slow_acquire(blocking=True, timeout=None):
        time.sleep(1.0)
        return acquire(blocking=blocking, timeout=timeout)

    lock.acquire = slow_acquire
    return lock


@pytest.mark.slow
def test_inconclusive_fails_unless_allowed(contend_target):
    with pytest.raises(ContendCheckFailed) as info:
        check_lock(_slow_lock, contend_target, checks=["model"], check_seconds=0.3)
    message = str(info.value)
    assert "model: inconclusive (timed out after 0.3 s)" in message
    assert "allow_inconclusive=True" in message

    (row,) = check_lock(
        _slow_lock, contend_target, checks=["model"], check_seconds=0.3, allow_inconclusive=True
    )
    assert [r.status for r in row.results] == [INCONCLUSIVE]


class NotCallable:
    pass


@pytest.mark.parametrize(
    ("factory", "options", "error", "message"),
    [
        (raising_lock.make, {"kind": "mutex"}, ValueError, "kind='mutex': contend checks one of"),
        (NotCallable(), {"kind": "lock"}, TypeError, "the factory must be callable"),
        (42, {"kind": "registry"}, TypeError, "factory(client: redis.Redis, namespace: str)"),
        (raising_lock.make, {"kind": "lock", "claim": ["fast"]}, ValueError, "a lock can claim"),
        (raising_lock.make, {"kind": "lock", "no_claim": "fencing"}, TypeError, "give a list"),
        (raising_lock.make, {"kind": "lock", "checks": ["serial"]}, ValueError, "the lock checks are"),
        (raising_lock.make, {"kind": "lock", "replay": "nope"}, ProtocolError, "expected VERSION:BLOB"),
        (lambda client: None, {"kind": "lock"}, ProtocolError, "factory is called as factory(client"),
        ("no_such_module_here:make", {"kind": "lock"}, ProtocolError, "cannot import"),
    ],
)
def test_bad_arguments_are_refused_before_a_server_starts(factory, options, error, message):
    """target=None would start a server: a refusal must come first, and fast."""
    started = time.perf_counter()
    with pytest.raises(error, match=re.escape(message)):
        check(factory, None, **options)
    assert time.perf_counter() - started < 1


def test_a_module_factory_spec_works_too(contend_target):
    (row,) = check_lock("tests.fixtures.foreign.raising_lock:make", contend_target, checks=["bad-input"])
    assert row.verdict == "pass"


class RaisingLockMachine(LockMachine):
    """The documented way: subclass the family's machine and point it at a factory."""

    factory = staticmethod(raising_lock.make)
    claims = LOCK_CLAIMS


class CheckThenSetLockMachine(LockMachine):
    factory = staticmethod(check_then_set_lock.make)
    claims = LOCK_CLAIMS


def test_a_subclassed_machine_passes_on_a_correct_lock(contend_target):
    run_machine(RaisingLockMachine, contend_target, examples=15)


def test_a_subclassed_machine_catches_a_mutant(contend_target):
    with pytest.raises(PropertyViolated) as info:
        run_machine(CheckThenSetLockMachine, contend_target, examples=EXAMPLES, shrink=False)
    assert info.value.property == MUTUAL_EXCLUSION


def test_machine_for_builds_the_family_machine(contend_target):
    machine = machine_for(zset_semaphore.make, "semaphore")
    assert issubclass(machine, LockMachine) and machine.limit == 2
    assert machine.claims == LOCK_CLAIMS
    run_machine(machine, contend_target, examples=5)
    with pytest.raises(ValueError, match="a lock can claim"):
        machine_for(raising_lock.make, "lock", claims=["runs-once"])


def test_run_machine_refuses_what_it_cannot_run(contend_target):
    with pytest.raises(TypeError, match="factory is not set"):
        run_machine(LockMachine, contend_target)
    with pytest.raises(TypeError, match="not a scheduled state machine class"):
        run_machine(raising_lock.make, contend_target)  # type: ignore[arg-type]


USER_SUITE = """
from hypothesis import settings

from contend.testing import check_lock
from tests.fixtures.foreign import check_then_set_lock, raising_lock


def test_profile():
    assert settings.get_current_profile_name() == "contend-ci"


def test_my_lock(contend_target):
    check_lock(raising_lock.make, contend_target, schedule_examples=10)


def test_my_broken_lock(contend_target):
    check_lock(
        check_then_set_lock.make, contend_target, checks=["schedule"], schedule_examples={examples},
        shrink=False, check_seconds=600, run_seconds=900,
    )
"""


@pytest.mark.slow
def test_a_users_suite_passes_a_correct_lock_and_fails_a_mutant(pytester, monkeypatch):
    """A fresh pytest process, as a user's suite runs: only the installed plugin (no conftest
    of this repository), `--hypothesis-profile contend-ci` accepted."""
    monkeypatch.setenv("PYTHONPATH", str(ROOT))
    pytester.makepyfile(test_user=USER_SUITE.format(examples=EXAMPLES))
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--hypothesis-profile", "contend-ci")
    result.assert_outcomes(passed=2, failed=1)
    out = result.stdout.str()
    assert "test_my_broken_lock" in out and "ContendCheckFailed" in out
    assert f"{MUTANT} · schedule · safety: mutual-exclusion" in out
    assert f"replay: contend check --impl {MUTANT} --kind lock --replay " in out


def test_the_suite_example_reads_as_the_docs_say():
    """docs/TESTING.md shows check_lock and the subclassed machine as tested here."""
    text = (ROOT / "docs" / "TESTING.md").read_text()
    assert "check_lock(make_lock, contend_target)" in text
    assert "class MyLockMachine(LockMachine)" in text and "run_machine(" in text
    assert "--hypothesis-profile contend-ci" in text


@pytest.mark.slow
def test_a_lock_over_masters_is_checked_from_a_test_suite():
    from contend.testing import check_lock

    rows = check_lock("tests.fixtures.masters.vote_lock:make", masters=3, checks=["crash", "lost-reply"])
    assert [row.verdict for row in rows] == ["pass"]
    with pytest.raises(ContendCheckFailed, match="safe-release"):
        check_lock("tests.fixtures.masters.blind_release_redlock:make", masters=3, checks=["expiry"])
