"""The batteries of `contend check` (locks, semaphores, single-flight, registries): correct ones
pass, and each known-bad one is caught, only for properties the catalog says it violates."""

from __future__ import annotations

import pytest

from contend.check.battery import ResultRow, checks_for, run_battery, unjudged
from contend.check.framework import CheckOptions
from contend.impl import catalog
from contend.subject.resolve import user_subject, with_capabilities
from contend.subject.subject import catalog_subjects

FAMILIES = ("lock", "semaphore", "single_flight", "registry")
IMPLS = [i for f in FAMILIES for i in catalog.family(f)]
#: 10 schedule examples for a correct one: stateful_tests/test_gate.py searches each catalog
#: machine further; a known-bad one is hunted until caught either way. The registries' serial and
#: burst checks smaller, as in the README's table (tests/commands/test_check.py).
OPTIONS = {
    "registry": CheckOptions(
        shrink=False, schedule_examples=10, serial_names=100, burst_rounds=5, burst_clients=8
    )
}


@pytest.mark.slow
@pytest.mark.parametrize("impl", [pytest.param(i, id=i.name) for i in IMPLS])
def test_battery_verdict_matches_the_catalog(impl, contend_target, ns):
    (subject,) = catalog_subjects(FAMILIES, [impl.name])
    options = OPTIONS.get(impl.family, CheckOptions(shrink=False, schedule_examples=10))
    (row,) = run_battery(contend_target, [subject], options, ns)
    assert_matches_catalog(row, impl)


def assert_matches_catalog(row: ResultRow, impl: catalog.Implementation) -> None:
    """A correct implementation passed every check; a known-bad one was caught, and only for
    properties the catalog says it violates."""
    failed = {r.check: (r.prop, r.detail) for r in row.failed}
    assert not row.inconclusive, row.inconclusive
    if not impl.known_bad:
        assert failed == {}, failed
        return
    assert row.verdict == "caught"
    shown = {prop for prop, _ in failed.values()}
    assert shown <= impl.violates, f"failed checks {failed} point at properties the catalog does not list"


def test_checks_that_need_a_claim_or_a_clock_are_left_out(contend_target, ns):
    subjects = {s.name: with_capabilities(s, contend_target, ns) for s in catalog_subjects(FAMILIES)}
    names = {n: [c.name for c in checks_for(s)] for n, s in subjects.items()}
    assert "fencing" in names["fenced"] and "fencing" not in names["token"]
    assert "skew" in names["setnx_getset"] and "skew" not in names["token"]
    assert "fifo" in names["fair_semaphore"] and "fifo" not in names["semaphore"]
    assert names["single_flight"] == [
        "model",
        "seed-001",
        "slow-leader",
        "handover",
        "leader-crash",
        "leader-error",
        "bad-input",
        "lost-reply",
        "schedule",
    ]


def test_a_user_lock_gets_the_lock_battery(contend_target):
    subject = user_subject("contend.impl.locks.token:factory", "lock", contend_target)
    assert subject.family == "lock" and catalog.MUTUAL_EXCLUSION in subject.claims
    assert [c.name for c in checks_for(subject)] == [
        "model",
        "seed-002",
        "burst",
        "expiry",
        "stale-extend",
        "crash",
        "bad-input",
        "lost-reply",
        "reacquire",
        "schedule",
    ]


def test_a_narrowed_run_says_not_run_for_a_known_bad_whose_judging_checks_were_left_out(contend_target, ns):
    """--check bad-input on the lock family: the known-bad locks break mutual exclusion, which
    bad-input does not judge; they are "not run", as expected, not NOT CAUGHT."""
    subjects = catalog_subjects(["lock"], ["setnx_getset", "token"])
    rows = run_battery(contend_target, subjects, CheckOptions(), ns, only_checks=["bad-input"])
    verdicts = {row.subject.name: (row.verdict, row.as_expected) for row in rows}
    assert verdicts == {"setnx_getset": ("not run", True), "token": ("pass", True)}
    (bad,) = [row for row in rows if row.subject.known_bad]
    assert "schedule" in bad.unjudged_by and "bad-input" not in bad.unjudged_by


def test_a_narrowed_run_that_ran_a_judging_check_still_says_not_caught():
    """Whether a check judges a known-bad's broken property decides "not run"; the schedule judges all."""
    (bad,) = catalog_subjects(["lock"], ["setnx_getset"])
    assert unjudged(bad, ["bad-input"]) and not unjudged(bad, ["bad-input", "schedule"])
    assert unjudged(bad, []) == ()  # the whole battery: NOT CAUGHT stays NOT CAUGHT
    assert ResultRow(bad).verdict == "NOT CAUGHT"
    assert ResultRow(bad, unjudged_by=("burst",)).verdict == "not run"
