"""Redlock over five embedded masters: correct as published, broken by a master restarted empty
while a client cut off from a minority holds the lock (Kleppmann's counterexample)."""

from __future__ import annotations

import pytest
from hypothesis.stateful import run_state_machine_as_test

from contend.impl.locks.redlock import Redlock, factory_over
from contend.machines.base import PropertyViolated
from contend.machines.redlock import five_masters, machine_for
from contend.machines.settings import machine_settings


@pytest.fixture(scope="module")
def masters():
    with five_masters() as (target, servers):
        yield target, servers


@pytest.fixture(autouse=True)
def _notes_outside_hypothesis(monkeypatch):
    monkeypatch.setattr("contend.machines.base.note", lambda text: None)


def test_a_majority_of_masters_holds_the_lock_and_release_frees_all(masters):
    target, servers = masters
    factory = factory_over(target.also)
    clients = [s.client() for s in servers]
    try:
        a = factory(clients[0], "contend:redlock-test:lock", 10_000)
        b = factory(clients[0].__class__.from_url(target.url), "contend:redlock-test:lock", 10_000)
        assert isinstance(a, Redlock) and a.quorum == 3
        assert a.acquire(blocking=False) and not b.acquire(blocking=False)
        assert sum(c.exists("contend:redlock-test:lock") for c in clients) == 5
        assert a.extend(20_000)
        a.release()
        assert sum(c.exists("contend:redlock-test:lock") for c in clients) == 0
        assert b.acquire(blocking=False)
        b.release()
    finally:
        for c in clients:
            c.close()


def _step_until_idle(m, index):
    for _ in range(50):
        if index not in m.in_flight or m.in_flight[index] != "acquire()":
            return
        m.before_step(index)
        m.scheduler.step(index)
        m._after_progress(index)


@pytest.mark.parametrize("lib", ["contend", "pottery"])
def test_kleppmanns_counterexample_is_two_holders(masters, lib):
    """c1 is cut off from masters 2 and 3 and takes 1, 4 and 5; master 1 restarts empty; c0, which
    reaches every master, takes 1, 2 and 3: a majority each, at the same time. pottery's Redlock
    (through the scoreboard's adapter) too."""
    target, servers = masters
    m = machine_for(target, servers, lib=lib)(target)
    try:
        m.cut_off(client=1, first=1)
        m.acquire(client=1, stall=False, stall_inside=None, crash_after=None, extend=False)
        _step_until_idle(m, 1)
        assert 1 in m.believers
        m.restart_master(which=0)
        m.acquire(client=0, stall=False, stall_inside=None, crash_after=None, extend=False)
        with pytest.raises(PropertyViolated) as info:
            _step_until_idle(m, 0)
        assert info.value.property == "mutual-exclusion"
        assert "c0 acquired while c1 held valid lease(s)" in info.value.detail
        trace = m.scheduler.format_trace()
        assert "c1 is cut off from master 2, master 3" in trace and "restarted empty" in trace
    finally:
        m.failed = True
        m.teardown()


def test_without_restarts_redlock_passes_the_same_search(masters):
    """Partitions, crashes, stalls and clock jumps, but no master loses its keys: no two holders.
    (Not for pottery yet: a long search on it did not always replay the same way; Hypothesis
    reported FlakyStrategyDefinition once in a full run, cause not found yet.)"""
    target, servers = masters
    machine = machine_for(target, servers, restarts=False)
    run_state_machine_as_test(lambda: machine(target), settings=machine_settings(60, shrink=False))  # type: ignore[arg-type]
