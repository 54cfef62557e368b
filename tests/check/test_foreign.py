"""Code contend has never seen: implementations written in other styles (tests/fixtures/foreign).

Every correct one must pass every check (a failure is a false alarm), and every mutant, which has
one deliberate defect, must be caught for the property that defect breaks (anything else is a
blind spot, or a catch for the wrong reason). See tests/fixtures/foreign/CATALOG.md.
"""

from __future__ import annotations

import dataclasses

import pytest

from contend.check.battery import run_battery
from contend.check.framework import CheckOptions
from contend.impl.catalog import (
    APPLIES_ONCE,
    CLOCK_SKEW_SAFE,
    CONSISTENT_AUDIT,
    CRASH_LIVENESS,
    FENCING,
    FIXED_WINDOW,
    GAP_FREE,
    MUTUAL_EXCLUSION,
    NO_DOUBLE_DELIVERY,
    NO_FALSE_REFUSAL,
    NO_LOSS,
    PROGRESS,
    RUNS_ONCE,
    SAFE_RELEASE,
    SERIALIZABLE,
    SLIDING_LOG,
    STABLE_IDS,
    STALE_GRANT,
    TABLES_AGREE,
)
from contend.subject.resolve import user_subject
from tests.fixtures import async_foreign, foreign

#: module, kind, the properties its defect may be reported as (the first is the one it breaks)
MUTANTS = [
    ("get_then_del_lock", "lock", {SAFE_RELEASE}),
    ("extend_any_lock", "lock", {SAFE_RELEASE}),
    ("clock_fenced_lock", "lock", {FENCING}),
    ("negative_cache_registry", "registry", {TABLES_AGREE, STABLE_IDS}),
    ("rerun_flight", "single_flight", {RUNS_ONCE}),
    ("plain_del_lock", "lock", {SAFE_RELEASE}),
    ("no_ttl_lock", "lock", {CRASH_LIVENESS}),
    ("two_step_lock", "lock", {CRASH_LIVENESS}),
    ("check_then_set_lock", "lock", {MUTUAL_EXCLUSION}),
    ("counting_semaphore_race", "semaphore", {MUTUAL_EXCLUSION}),
    ("racy_registry", "registry", {STABLE_IDS, GAP_FREE, TABLES_AGREE}),
    # Counted as correct until contend paused clients between the round trips of an acquire: its
    # votes have no validity, so copies that ran out during the pause still count (issue 25).
    ("quorum_lock", "lock", {MUTUAL_EXCLUSION, STALE_GRANT}),
    ("pipeline_bank", "transaction", {SERIALIZABLE, APPLIES_ONCE, CONSISTENT_AUDIT}),
    ("skewed_audit_bank", "transaction", {SERIALIZABLE, CONSISTENT_AUDIT}),
    # Written as correct: redis-py reports a connection dropped at EXEC as a WatchError, which
    # client.transaction() retries; an EXEC that had run moves the money twice, or the retry reads
    # what others wrote after its own first EXEC (G1c: T3 -wr-> T1 -wr-> T3), and the transfer
    # reports what that retry saw.
    ("helper_bank", "transaction", {APPLIES_ONCE, SERIALIZABLE}),
    ("guard_debit_bank", "transaction", {SERIALIZABLE, CONSISTENT_AUDIT, APPLIES_ONCE}),
    ("two_step_bank", "transaction", {SERIALIZABLE, CONSISTENT_AUDIT, APPLIES_ONCE}),
    # Reported for liveness ("the crashed holder's TTL passes", then refused) while the machines
    # rewrote TTLs instead of moving the server's clock (issue 37).
    ("pxat_lock", "lock", {CLOCK_SKEW_SAFE, MUTUAL_EXCLUSION, STALE_GRANT}),
    # Faults where they bite (issue 39): each harms another client, only when one is there.
    # A deadline read off the wall clock: a waiter's clock set back while the holder is slow.
    ("wall_deadline_lock", "lock", {PROGRESS}),
    ("del_fallback_lock", "lock", {SAFE_RELEASE, MUTUAL_EXCLUSION}),
    ("reclaim_extend_lock", "lock", {SAFE_RELEASE, MUTUAL_EXCLUSION}),
    ("self_serving_flight", "single_flight", {RUNS_ONCE}),
    ("double_free_semaphore", "semaphore", {MUTUAL_EXCLUSION}),
    # nack read as "reject": the job given back is dropped.
    ("nack_drop_queue", "queue", {NO_LOSS}),
    # Written as correct (lua_queue before receipts): the state machine found the stale nack.
    ("stale_nack_queue", "queue", {NO_DOUBLE_DELIVERY}),
    # A "be robust" loop resends the script after a lost reply: one hit counted twice.
    ("retry_log", "rate_limiter", {NO_FALSE_REFUSAL}),
    # Times from the client's clock; a stall between reading it and the script ages them too.
    ("client_clock_log", "rate_limiter", {CLOCK_SKEW_SAFE, SLIDING_LOG, FIXED_WINDOW}),
    # (transaction_bucket, watch_bucket as first written with client.transaction(), which retries
    # an EXEC whose connection dropped, is not caught at this budget: it needs a lost reply at
    # EXEC on a hit that empties the bucket. The faults benchmark measures it.)
]

#: 50 schedule examples for a correct one (the schedule check was two thirds of each test's time at
#: 100); a mutant is hunted as `contend check` hunts one, up to CheckOptions.hunt_examples.
OPTIONS = CheckOptions(shrink=False, schedule_examples=50, serial_names=300, burst_rounds=8, model_ops=150)


#: Mutants whose harm needs a fault where another client is: `contend check --impl`'s default
#: 200 examples, as a user gets (the faults benchmark measures how reliably, seed after seed).
AT_DEFAULT_BUDGET = {
    "del_fallback_lock",
    "wall_deadline_lock",
    "self_serving_flight",
    "double_free_semaphore",
    "retry_log",
}


#: Run in the soak tier only (`pytest -m soak`): styles the default run's others already cover.
SOAK = {"raising_lock", "threadlocal_lock", "held_set_lock", "redispy_lock", "return_fenced_lock", "watch_registry",
        "claim_registry",
        "extend_any_lock", "plain_del_lock", "two_step_lock", "check_then_set_lock", "racy_registry",
        "hash_bank", "plain_bank", "pipeline_bank", "skewed_audit_bank", "helper_bank",
        "script_read_bank", "dotted_bank", "noisy_bank", "guard_debit_bank", "two_step_bank",
        *AT_DEFAULT_BUDGET}  # fmt: skip


def params(rows: list[tuple]) -> list:
    return [pytest.param(*row, id=row[0], marks=pytest.mark.soak if row[0] in SOAK else ()) for row in rows]


def check(module: str, kind: str, target, ns, package: str = "foreign"):
    claims = async_foreign.LIMITER_CLAIMS if package == "async_foreign" else foreign.LIMITER_CLAIMS
    claim, no_claim = claims.get(module, ((), ()))
    subject = user_subject(
        f"tests.fixtures.{package}.{module}:make", kind, target, claim=claim, no_claim=no_claim
    )
    options = dataclasses.replace(OPTIONS, schedule_examples=200) if module in AT_DEFAULT_BUDGET else OPTIONS
    (row,) = run_battery(target, [subject], options, ns)
    return row


@pytest.mark.slow
@pytest.mark.parametrize(("module", "kind"), params(foreign.CORRECT))
def test_a_correct_implementation_gets_no_false_alarm(module, kind, contend_target, ns):
    row = check(module, kind, contend_target, ns)
    assert row.verdict == "pass", {r.check: r.detail for r in row.results if not r.passed}


#: The async locks written in other styles, whole battery: the soak tier's (the default run takes
#: each in the checks it was written for).
@pytest.mark.soak
@pytest.mark.parametrize("module", async_foreign.CORRECT)
def test_a_correct_async_lock_gets_no_false_alarm(module, contend_target, ns):
    row = check(module, "lock", contend_target, ns, package="async_foreign")
    assert row.verdict == "pass", {r.check: r.detail for r in row.results if not r.passed}


@pytest.mark.slow
@pytest.mark.parametrize("module", async_foreign.CORRECT_LIMITERS)
def test_a_correct_async_limiter_gets_no_false_alarm(module, contend_target, ns):
    row = check(module, "rate_limiter", contend_target, ns, package="async_foreign")
    assert row.verdict == "pass", {r.check: r.detail for r in row.results if not r.passed}


@pytest.mark.slow
@pytest.mark.parametrize(("module", "kind", "broken"), params(MUTANTS))
def test_a_mutant_is_caught_for_the_property_it_breaks(module, kind, broken, contend_target, ns):
    row = check(module, kind, contend_target, ns)
    found = {r.prop for r in row.failed}
    assert found, f"{module} passed every check: a blind spot"
    assert found <= broken, f"{module} was reported for {found - broken}: {[r.detail for r in row.failed]}"
