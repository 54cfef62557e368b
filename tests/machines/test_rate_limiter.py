"""contend.machines.rate_limiter: correct limiters keep every property, each known-bad one is caught
for what it breaks, and the machine's judgements on schedules forced step by step."""

from __future__ import annotations

import pytest

from contend.impl.catalog import FIXED_WINDOW, NO_FALSE_REFUSAL, NO_STUCK_KEY, by_name, family
from contend.machines.family import family_machine
from contend.machines.hunt import run_once
from contend.machines.rate_limiter import RateLimiterMachine

KNOWN_BAD = [pytest.param(i, id=i.name) for i in family("rate_limiter") if i.known_bad]


@pytest.mark.parametrize("name", ["fixed_window", "sliding_log", "gcra"])
def test_a_correct_limiter_keeps_its_properties(name, contend_target):
    _, violation, _ = run_once(
        family_machine(by_name(name)), contend_target, seed=1, max_examples=60, shrink=False
    )
    assert violation is None, violation


@pytest.mark.parametrize("impl", KNOWN_BAD)
def test_a_known_bad_limiter_is_caught_for_what_it_breaks(impl, contend_target):
    _, violation, _ = run_once(family_machine(impl), contend_target, seed=0, max_examples=500, shrink=False)
    assert violation is not None, f"{impl.name} was not caught"
    assert violation.property in impl.violates, violation


def forced(name, target, claims=None):
    machine = family_machine(by_name(name))
    if claims is not None:
        machine = type("Forced", (machine,), {"claims": frozenset(claims)})
    return machine(target)


def test_a_crash_between_incr_and_expire_is_a_stuck_key(contend_target):
    machine = forced("incr_then_expire", contend_target)
    try:
        machine.hit(0, 1)
        machine.scheduler.step(0)  # INCRBY
        machine.scheduler.crash(0)
        machine.crashed(0)
        with pytest.raises(Exception):  # noqa: B017 (outside a Hypothesis test, its note() raises too)
            machine.check_quiescent()
        assert machine.violation.property == NO_STUCK_KEY
        assert "had no expiry" in machine.violation.detail and "c0 crashed" in machine.violation.detail
    finally:
        machine.failed = True  # teardown only cleans up
        machine.teardown()


def test_two_that_read_the_same_count_over_admit(contend_target):
    machine = forced("get_then_incr", contend_target)
    try:
        for client in (0, 0, 0):  # the first idle worker each time: c0, c1, c2
            machine.hit(client, 1)
        for index in (0, 1, 2):  # three GETs of an empty counter
            machine.scheduler.step(index)
        with pytest.raises(Exception):  # noqa: B017
            machine.finish_all()
        assert machine.violation.property == FIXED_WINDOW
        assert "3 admitted in one window (limit 2)" in machine.violation.detail
    finally:
        machine.failed = True
        machine.teardown()


def test_a_refusal_after_a_quiet_window_is_false(contend_target):
    """A limiter that refuses every hit after its first is caught once a window has passed."""

    class Once:
        def __init__(self, client, key, limit, window_ms):
            self.client, self.key = client, key

        def hit(self, cost=1):
            return bool(self.client.set(self.key, 1, nx=True, px=60_000))

    machine_type = type(
        "OnceMachine",
        (RateLimiterMachine,),
        {"factory": staticmethod(Once), "claims": frozenset({FIXED_WINDOW, NO_FALSE_REFUSAL})},
    )
    machine = machine_type(contend_target)
    try:
        machine.hit(0, 1)
        machine.finish_all()
        machine.wait(1.1)
        machine.hit(0, 1)
        with pytest.raises(Exception):  # noqa: B017
            machine.finish_all()
        assert machine.violation.property == NO_FALSE_REFUSAL
        assert "used 0 of 2" in machine.violation.detail
    finally:
        machine.failed = True
        machine.teardown()


def test_a_key_a_jump_runs_out_is_expired_at_the_jump_not_when_the_servers_cron_runs(contend_target):
    """The server's active expiry runs in real time: left to it, a key the virtual clock ran out
    would be deleted before some client's next command in one run and after it in another (on
    Redis 6.2 a WATCH then passes on the absent key, or is aborted by the deletion), and the same
    example would behave differently. The machine expires such keys itself, right after the jump."""
    machine = forced("fixed_window", contend_target)
    try:
        machine.hit(0, 1)
        machine.step_alone(0, max_steps=20)  # the hit, to its end (the machine notes its keys)
        key = machine.key
        admin = machine.admin
        before = admin.dbsize()
        assert admin.pttl(key) > 0
        machine.scheduler.advance(2 * machine.window, note="two windows pass")
        assert admin.dbsize() == before - 1, "the counter the jump ran out is gone at once"
        assert any(key in step.note and "expires" in step.note for step in machine.scheduler.trace)
    finally:
        machine.failed = True
        machine.teardown()
