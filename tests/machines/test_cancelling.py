"""Cancellation rules in the async machines: correct async code passes with them, the #3847 kind
of release is caught, and synchronous machines do not get them (their examples stay as they were)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from hypothesis.stateful import run_state_machine_as_test

from contend.impl.catalog import CRASH_LIVENESS, MUTUAL_EXCLUSION, SAFE_RELEASE, async_by_name, by_name
from contend.machines.base import PropertyViolated
from contend.machines.family import family_machine
from contend.machines.settings import machine_settings
from contend.schedule.client import Status
from tests.fixtures.async_foreign import mutants, redispy_lock, undo_lock, watch_lock
from tests.machines.helpers import driven_by_hand

_LEASE = frozenset({MUTUAL_EXCLUSION, SAFE_RELEASE, CRASH_LIVENESS})


@pytest.mark.parametrize("name", ["async_token", "async_lua"])
@pytest.mark.slow
def test_correct_async_code_survives_cancelled_operations(contend_target, name):
    machine = family_machine(async_by_name(name))
    assert hasattr(machine, "cancel_release" if name == "async_token" else "cancel_register")
    run_state_machine_as_test(lambda: machine(contend_target), settings=machine_settings(150, shrink=False))  # type: ignore[arg-type]


def test_a_release_that_clears_its_token_first_is_caught(contend_target):
    machine = family_machine(async_by_name("async_early_clear"))
    with pytest.raises(PropertyViolated) as info:
        run_state_machine_as_test(
            lambda: machine(contend_target), settings=machine_settings(150, shrink=False)
        )  # type: ignore[arg-type]
    assert info.value.property == "crash-liveness" and "the lease is orphaned" in info.value.detail


def test_synchronous_machines_have_no_cancellation_rule():
    for name in ("token", "lua"):
        machine = family_machine(by_name(name))
        assert not hasattr(machine, "cancel_release") and not hasattr(machine, "cancel_register")
        assert not machine.asynchronous


@pytest.fixture(autouse=True)
def _notes_outside_hypothesis(monkeypatch):
    """The rules below are also called directly, outside a Hypothesis test: notes are kept here."""
    notes: list[str] = []
    monkeypatch.setattr("contend.machines.base.note", notes.append)
    return notes


def _machine(contend_target, factory):
    """A machine for an async lock given as a factory, as `contend check --impl` builds it."""
    impl = SimpleNamespace(
        name="under-test", family="lock", factory=factory, claims=_LEASE, asynchronous=True
    )
    return family_machine(impl)(contend_target)


def _step(machine, index):
    machine.before_step(index)
    machine.scheduler.step(index)
    machine._after_progress(index)


def _step_until(machine, index, done):
    for _ in range(50):
        if done():
            return
        _step(machine, index)
    raise AssertionError("never got there")


def test_a_crash_planned_for_a_cancelled_release_is_not_a_hang(contend_target):
    """Found reviewing the async battery: a crash drawn for the client's operation fired in the
    `release() again` the cancel rule runs, and was reported as 'did not finish'. Here on a
    three-round-trip WATCH release: the acquire's one round trip and one of the release's, then the
    cancellation; the crash planned after four would have fired in the release run after it."""
    m = _machine(contend_target, watch_lock.make)
    try:
        m.acquire(client=0, stall=False, stall_inside=None, crash_after=4, extend=False)
        _step_until(m, 0, lambda: m.in_flight.get(0) == "release()")
        _step(m, 0)  # WATCH
        assert m.crash_plan
        m.cancel_release(which=0, while_awaiting_reply=False)
        assert not m.crash_plan and m.scheduler.clients[0].status is Status.IDLE
    finally:
        m.teardown()


def test_a_cancelled_acquire_that_undoes_with_a_plain_del_is_caught(contend_target):
    """c0 holds; c1's SET NX is refused, and c1 is cancelled while it awaits that reply; its undo
    deletes c0's lease, and a third client gets in at once."""
    with driven_by_hand(_machine(contend_target, mutants.undo_with_del)) as m:
        m.acquire(client=0, stall=False, stall_inside=None, crash_after=None, extend=False)
        _step_until(m, 0, lambda: m.in_flight.get(0) == "release()")  # c0 holds, about to release
        m.acquire(client=0, stall=False, stall_inside=None, crash_after=None, extend=False)  # c1
        with pytest.raises(PropertyViolated) as info:
            m.cancel_acquire(which=0, while_awaiting_reply=True, now=True)
        assert info.value.property == "mutual-exclusion"
        assert "c1's acquire() was cancelled after its command is sent" in info.value.detail


@pytest.mark.parametrize("while_awaiting_reply", [False, True])
def test_an_undo_of_its_own_token_survives_the_same_cancellation(contend_target, while_awaiting_reply):
    m = _machine(contend_target, undo_lock.make)
    try:
        m.acquire(client=0, stall=False, stall_inside=None, crash_after=None, extend=False)
        _step_until(m, 0, lambda: m.in_flight.get(0) == "release()")
        m.acquire(client=0, stall=False, stall_inside=None, crash_after=None, extend=False)
        m.cancel_acquire(which=0, while_awaiting_reply=while_awaiting_reply, now=True)
        assert 1 in m.crashed_holders  # may hold a lease it does not know of: its TTL must end it
    finally:
        m.teardown()


@pytest.mark.parametrize("factory", [undo_lock.make, watch_lock.make, redispy_lock.make])
@pytest.mark.slow
def test_locks_in_other_styles_pass_with_acquires_and_extends_cancelled(contend_target, factory):
    impl = SimpleNamespace(
        name="under-test", family="lock", factory=factory, claims=_LEASE, asynchronous=True
    )
    machine = family_machine(impl)
    assert hasattr(machine, "cancel_acquire")
    run_state_machine_as_test(lambda: machine(contend_target), settings=machine_settings(80, shrink=False))  # type: ignore[arg-type]


def test_the_machine_finds_an_undo_with_a_plain_del(contend_target):
    impl = SimpleNamespace(
        name="under-test", family="lock", factory=mutants.undo_with_del, claims=_LEASE, asynchronous=True
    )
    machine = family_machine(impl)
    with pytest.raises(PropertyViolated) as info:
        run_state_machine_as_test(
            lambda: machine(contend_target), settings=machine_settings(300, shrink=False)
        )  # type: ignore[arg-type]
    assert info.value.property == "mutual-exclusion"
