"""Redlock over five embedded masters: correct as published, broken by a master restarted empty
while a client cut off from a minority holds the lock (Kleppmann's counterexample)."""

from __future__ import annotations

import re

import pytest
from hypothesis.stateful import run_state_machine_as_test

from contend.impl.locks.redlock import Redlock, factory_over
from contend.machines.base import PropertyViolated
from contend.machines.fencing import NO_STALE_WRITE
from contend.machines.redlock import five_masters, machine_for, resource_server
from contend.machines.settings import machine_settings
from tests.machines.helpers import driven_by_hand, step_while


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


@pytest.mark.parametrize("lib", ["contend", "pottery"])
def test_kleppmanns_counterexample_is_two_holders(masters, lib):
    """c1 is cut off from masters 2 and 3 and takes 1, 4 and 5; master 1 restarts empty; c0, which
    reaches every master, takes 1, 2 and 3: a majority each, at the same time. pottery's Redlock
    (through the scoreboard's adapter) too."""
    target, servers = masters
    with driven_by_hand(machine_for(target, servers, lib=lib)(target)) as m:
        m.cut_off(client=1, first=1)
        m.acquire(client=1, stall=False, stall_inside=None, crash_after=None, extend=False)
        step_while(m, 1, "acquire(")
        assert 1 in m.believers
        m.restart_master(which=0)
        m.acquire(client=0, stall=False, stall_inside=None, crash_after=None, extend=False)
        with pytest.raises(PropertyViolated) as info:
            step_while(m, 0, "acquire(")
        assert info.value.property == "mutual-exclusion"
        assert "c0 acquired while c1 held valid lease(s)" in info.value.detail
        trace = m.scheduler.format_trace()
        assert re.search(r"c1 is cut off from master 2 \(127\.0\.0\.1:\d+\), master 3 \(", trace)
        assert "restarted empty" in trace


@pytest.mark.slow
def test_without_restarts_redlock_passes_the_same_search(masters):
    """Partitions, crashes, stalls and clock jumps, but no master loses its keys: no two holders.
    (Not for pottery yet: a long search on it did not always replay the same way; Hypothesis
    reported FlakyStrategyDefinition once in a full run, cause not found yet.)"""
    target, servers = masters
    machine = machine_for(target, servers, restarts=False)
    run_state_machine_as_test(lambda: machine(target), settings=machine_settings(60, shrink=False))  # type: ignore[arg-type]


# Fencing: the same two-holder schedule, with a protected resource on a sixth server -------------
@pytest.fixture(scope="module")
def resource():
    with resource_server("resource") as url:
        yield url


def _two_holders_then_the_stale_write(m):
    """Kleppmann's schedule with writes: c1, cut off from masters 2 and 3, takes 1, 4 and 5 and
    its token, and holds; master 1 restarts empty; c0 takes 1, 2 and 3 (two holders), its token,
    writes and releases; then c1 writes with the token it took first."""
    m.cut_off(client=1, first=1)
    m.acquire(client=1, stall=False, stall_inside=None, crash_after=None, extend=False, hold=True)
    step_while(m, 1, "acquire(", "token(")
    assert m.held == {1} and 1 in m.believers
    m.restart_master(which=0)
    m.acquire(client=0, stall=False, stall_inside=None, crash_after=None, extend=False)
    step_while(m, 0, "acquire(", "token(", "write(", "release(")
    assert m.overlaps == [(1, 2)]  # c0's grant came while c1's was valid
    m.proceed(client=0)
    step_while(m, 1, "write(")


def test_fenced_resource_refuses_the_stale_holders_write(masters, resource):
    """Tokens from the resource's own counter: the lock still has two holders, but the resource
    refuses c1's write (token 1 after token 2) and keeps c0's."""
    target, servers = masters
    m = machine_for(target, servers, fence="resource", resource_url=resource)(target)
    try:
        _two_holders_then_the_stale_write(m)
        assert m.token_of == {1: 1, 0: 2}
        assert m.refused == {1} and m.landed == {2}  # grants: c1's was the first, c0's the second
        assert m.resource_admin is not None and m.resource_admin.hget(m.resource_key, "value") == b"c0#2"
        trace = m.scheduler.format_trace()
        assert "c0 acquired while c1 holds a valid lease: two holders" in trace
    finally:
        m.teardown()
    assert type(m).stats["two holders, a write refused"] == 1


@pytest.mark.parametrize(
    ("fence", "admitted"),
    [
        ("none", "was granted"),  # no token at all: c1's late write lands
        ("unchecked", "took its token, token 1"),  # the resource ignores the tokens
        ("master", "took its token, token 1"),  # master 1's counter restarted: c0 got token 1 too
    ],
)
def test_a_stale_write_without_working_fencing_is_caught(masters, resource, fence, admitted):
    target, servers = masters
    with driven_by_hand(machine_for(target, servers, fence=fence, resource_url=resource)(target)) as m:
        with pytest.raises(PropertyViolated) as info:
            _two_holders_then_the_stale_write(m)
        assert info.value.property == NO_STALE_WRITE
        assert "the resource took c1#1's write over c0#2's" in info.value.detail
        assert f"(#1, when it {admitted})" in info.value.detail
        assert "its lease still valid: two holders at once" in info.value.detail


@pytest.mark.slow
def test_the_search_finds_the_unchecked_resources_stale_write(masters, resource):
    """Not scripted: the fenced machine's own search catches a resource that ignores tokens."""
    target, servers = masters
    machine = machine_for(target, servers, fence="unchecked", resource_url=resource)
    with pytest.raises(PropertyViolated) as info:
        run_state_machine_as_test(lambda: machine(target), settings=machine_settings(300, shrink=False))  # type: ignore[arg-type]
    assert info.value.property == NO_STALE_WRITE


@pytest.mark.slow
def test_the_fenced_search_keeps_the_resource_in_order(masters, resource):
    """The same search with tokens from the resource's counter, checked: no stale write lands."""
    target, servers = masters
    machine = machine_for(target, servers, fence="resource", resource_url=resource)
    run_state_machine_as_test(lambda: machine(target), settings=machine_settings(60, shrink=False))  # type: ignore[arg-type]
