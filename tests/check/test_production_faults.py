"""Production faults on code contend never saw (issue 25): lost replies, stalls inside an acquire,
deadlines, and single-flight's runs-once under chosen schedules.

Each one-defect mutant in tests/fixtures/foreign is caught by the check meant for its fault, for
the property its defect breaks; correct implementations in other styles pass those checks. Only
the check in question runs, with a fixed seed, so the search is the same on every run.
"""

from __future__ import annotations

import pytest

from contend.check.battery import run_battery
from contend.check.framework import CheckOptions
from contend.impl.catalog import (
    CRASH_LIVENESS,
    GAP_FREE,
    MUTUAL_EXCLUSION,
    PROGRESS,
    RUNS_ONCE,
    SAFE_RELEASE,
    STALE_GRANT,
    TABLES_AGREE,
    by_name,
)
from contend.machines.base import PropertyViolated
from contend.machines.family import family_machine
from contend.subject.resolve import user_subject
from tests.machines.helpers import driven_by_hand, step_while

OPTIONS = CheckOptions(shrink=False, schedule_examples=200, serial_names=200, burst_rounds=4, model_ops=100)

#: module, kind, the check meant for its fault, the properties its defect may be reported as
MUTANTS = [
    ("retry_incr_registry", "registry", "lost-reply", {GAP_FREE, TABLES_AGREE}),
    ("hopeful_lock", "lock", "lost-reply", {MUTUAL_EXCLUSION}),
    ("touch_lock", "lock", "schedule", {STALE_GRANT, MUTUAL_EXCLUSION}),
    ("fence_after_lock", "lock", "schedule", {STALE_GRANT, MUTUAL_EXCLUSION}),
    ("patient_lock", "lock", "schedule", {PROGRESS}),
    ("lease_sleeper_lock", "lock", "schedule", {PROGRESS}),
    ("early_release_flight", "single_flight", "handover", {RUNS_ONCE}),
    ("rerun_flight", "single_flight", "schedule", {RUNS_ONCE}),
    # A lost release reply while another client waits: the waiter takes the freed place at once.
    ("del_fallback_lock", "lock", "lost-reply", {SAFE_RELEASE}),
    ("double_free_semaphore", "semaphore", "lost-reply", {MUTUAL_EXCLUSION}),
    # A lost release reply leaves a re-entrant count set: the next acquire grants without asking.
    ("sticky_reentrant_lock", "lock", "reacquire", {MUTUAL_EXCLUSION}),
]

CORRECT = [
    ("raising_lock", "lock", "lost-reply"),
    ("returning_lock", "lock", "lost-reply"),
    ("raising_lock", "lock", "reacquire"),
    ("threadlocal_lock", "lock", "reacquire"),
    ("redispy_lock", "lock", "reacquire"),
    ("held_set_lock", "lock", "reacquire"),
    ("zset_semaphore", "semaphore", "lost-reply"),
    ("lua_registry", "registry", "lost-reply"),
    ("watch_registry", "registry", "lost-reply"),
    ("flight", "single_flight", "lost-reply"),
]


def run(module: str, kind: str, check: str, target, ns):
    subject = user_subject(f"tests.fixtures.foreign.{module}:make", kind, target)
    (row,) = run_battery(target, [subject], OPTIONS, ns, only_checks=[check])
    return row


@pytest.mark.slow
@pytest.mark.parametrize(("module", "kind", "check", "broken"), MUTANTS, ids=[m[0] for m in MUTANTS])
def test_a_mutant_is_caught_by_the_check_for_its_fault(module, kind, check, broken, contend_target, ns):
    row = run(module, kind, check, contend_target, ns)
    found = {r.prop for r in row.failed}
    assert found, f"{module}: the {check} check passed it ({[r.detail for r in row.results]})"
    assert found <= broken, f"{module} was reported for {found - broken}: {[r.detail for r in row.failed]}"


@pytest.mark.parametrize(("module", "kind", "check"), CORRECT, ids=[m[0] for m in CORRECT])
def test_a_correct_implementation_survives_lost_replies(module, kind, check, contend_target, ns):
    row = run(module, kind, check, contend_target, ns)
    assert row.verdict == "pass", {r.check: r.detail for r in row.results if not r.passed}


def test_a_stale_grant_names_the_stall_and_the_virtual_times(contend_target, ns):
    row = run("touch_lock", "lock", "schedule", contend_target, ns)
    (result,) = row.failed
    assert result.prop in (STALE_GRANT, MUTUAL_EXCLUSION)
    if result.prop == STALE_GRANT:
        assert "after a stall of" in result.detail and "virtual time" in result.detail
        assert "a third client took the lock right after" in result.detail


@pytest.mark.parametrize("name", ["redis_objects", "setnx_getset"])
def test_a_lease_timed_by_the_clients_clock_is_stale_when_written_after_a_stall(
    name, contend_target, monkeypatch
):
    """Locks whose value is an expiry time on the client's clock (no TTL on the server), with the
    schedule forced: c0 holds and stalls past its lease; c1 finds it expired (SETNX, GET), stalls
    longer than the TTL, then GETSETs the expiry it computed before the stall, already past, and
    reports a grant. No key runs out by a TTL here, and the stale grant is still named."""
    monkeypatch.setattr("contend.machines.base.note", lambda text: None)  # outside Hypothesis
    with driven_by_hand(family_machine(by_name(name))(contend_target)) as m:
        m.acquire(client=0, stall=True, stall_inside=None, crash_after=None, extend=False)
        step_while(m, 0, "acquire(")
        m.acquire(
            client=1, stall=False, stall_inside=None, crash_after=None, extend=False, pause_in_acquire=2
        )
        with pytest.raises(PropertyViolated) as info:
            step_while(m, 1, "acquire(")
    assert info.value.property == STALE_GRANT, info.value.detail
    assert "a third client took the lock right after" in info.value.detail


def test_a_missed_deadline_says_how_long_it_waited(contend_target, ns):
    row = run("lease_sleeper_lock", "lock", "schedule", contend_target, ns)
    (result,) = row.failed
    assert result.prop == PROGRESS
    assert "acquire(timeout=0.2)" in result.detail and "past its timeout" in result.detail


@pytest.mark.parametrize(
    ("module", "kind", "verdict"),
    [("redispy_lock", "lock", "pass"), ("watch_lock", "lock", "pass")],
)
def test_async_locks_keep_their_grants_true_under_lost_replies(module, kind, verdict, contend_target, ns):
    subject = user_subject(f"tests.fixtures.async_foreign.{module}:make", kind, contend_target)
    (row,) = run_battery(contend_target, [subject], OPTIONS, ns, only_checks=["lost-reply"])
    assert row.verdict == verdict, {r.check: r.detail for r in row.results if not r.passed}


@pytest.mark.parametrize(("factory", "broken"), [("hopeful", MUTUAL_EXCLUSION), ("no_ttl", CRASH_LIVENESS)])
def test_async_lost_replies_catch_a_hopeful_grant_and_a_lease_left_for_ever(
    factory, broken, contend_target, ns
):
    """An acquire that takes a lost reply for a grant lets two in; a SET NX without PX whose reply
    was lost leaves a lease nobody can end: crash liveness, not mutual exclusion."""
    subject = user_subject(f"tests.fixtures.async_foreign.mutants:{factory}", "lock", contend_target)
    (row,) = run_battery(contend_target, [subject], OPTIONS, ns, only_checks=["lost-reply"])
    assert [r.prop for r in row.failed] == [broken], {r.check: r.detail for r in row.failed}


def test_a_lost_release_reply_names_what_the_code_sent_next(contend_target, ns):
    """del_fallback_lock falls back to a plain DEL when its release's reply is lost: the waiter that
    took the lock the moment the server freed it loses its lease, and the evidence names the DEL."""
    row = run("del_fallback_lock", "lock", "lost-reply", contend_target, ns)
    (failed,) = row.failed
    assert failed.prop == SAFE_RELEASE
    assert "while another client waited" in failed.detail and "its code then sent DEL " in failed.detail
    assert "HELLO" not in failed.detail  # a new connection's handshake is not the code's answer
