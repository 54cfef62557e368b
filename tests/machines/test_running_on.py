"""Running clients on outside the search: the end of an example (`finish_all`) passes no sleeper
over for ever, and a client run alone (`step_alone`) wakes from its own sleeps while a paused
client is ready to send. Both were false alarms of progress on correct code."""

from __future__ import annotations

import threading
from types import SimpleNamespace

import pytest

from contend.impl.catalog import (
    CRASH_LIVENESS,
    LEADER_FAILURE,
    MUTUAL_EXCLUSION,
    PROGRESS,
    RUNS_ONCE,
    SAFE_RELEASE,
    SHARED_RESULT,
)
from contend.machines.base import PropertyViolated, next_in_turn
from contend.machines.family import family_machine
from contend.schedule.client import Status
from tests.fixtures.async_foreign import watch_lock
from tests.fixtures.foreign import raising_lock, self_serving_flight, wall_deadline_lock
from tests.machines.helpers import driven_by_hand, step_while


@pytest.fixture(autouse=True)
def _notes_outside_hypothesis(monkeypatch):
    """The rules below are called directly, outside a Hypothesis test: notes are kept here."""
    notes: list[str] = []
    monkeypatch.setattr("contend.machines.base.note", notes.append)
    return notes


def _step(m, index):
    m.before_step(index)
    m.scheduler.step(index)
    m._after_progress(index)


def test_the_next_client_in_turn_goes_round_the_clients():
    assert next_in_turn(2, [1, 2, 3]) == 2  # the current one while it can
    assert next_in_turn(2, [0, 1, 3]) == 3  # else the next after it...
    assert next_in_turn(3, [0, 1]) == 0  # ...round the clients
    assert next_in_turn(None, [1, 3]) == 1


def test_two_fast_pollers_do_not_starve_the_leaders_heartbeat(contend_target):
    """seed 1 of `contend check` on self_serving_flight: c0 leads a failing 0.05 s computation and
    its heartbeat thread (c0.t1, the last client) waits in Event.wait; c1 and c2 poll every 3 ms,
    a wake and a round trip each, so one of them is always ready. Picking the lowest index at the
    end never ran c0.t1 again, c0's join of it never ended, and 5,000 round trips later the
    example was called a livelock. In turn, it ends: c0 raises its computation's error and the
    waiters raise the leader's failure."""
    impl = SimpleNamespace(
        name="under-test",
        family="single_flight",
        factory=self_serving_flight.make,
        claims=frozenset({RUNS_ONCE, SHARED_RESULT, LEADER_FAILURE}),
    )
    with driven_by_hand(family_machine(impl)(contend_target)) as m:
        m.call(client=0, slow=0.05, fails=True)
        leader = m.scheduler.clients[0]
        while not leader.children:  # SET NX PX: c0 leads and starts its heartbeat
            _step(m, 0)
        m.call(client=0, slow=0.0, fails=False)  # c1
        m.call(client=0, slow=0.0, fails=False)  # c2
        for index in (1, 2):  # each refused the lead and polling
            _step(m, index)
            _step(m, index)
        heartbeat = leader.children[0]
        _step(m, heartbeat.index)  # it runs, into its Event.wait
        assert heartbeat.index == 3 and heartbeat.status is Status.SLEEPING
        m.finish_all()
        assert heartbeat.status is Status.ENDED
        assert [type(c.outcome.error).__name__ for c in m.scheduler.clients[:3]] == [
            "ComputationFailed",
            "RuntimeError",
            "RuntimeError",
        ]
        assert len(m.computations) == 1


async def _through_a_thread(conn):
    """What redis-py's async cluster pipeline does for WATCH and GET in a transaction: start a
    thread and join it (synchronously), then go on on the loop."""
    thread = threading.Thread(target=lambda: None)
    thread.start()
    thread.join()
    return await conn.ping()


def test_a_client_run_alone_wakes_while_a_paused_one_is_ready(contend_target):
    """The cancel rule's `release() again` on a Redis Cluster: the client's code starts a thread
    and waits for it in join (asleep on the virtual clock) while another client, paused, is ready
    to send. The clock jumped only when no client at all was ready, so the client run alone never
    woke and its release was called a hang ("did not finish in 200 round trips on its own")."""
    impl = SimpleNamespace(
        name="under-test",
        family="lock",
        factory=watch_lock.make,
        claims=frozenset({MUTUAL_EXCLUSION, SAFE_RELEASE, CRASH_LIVENESS}),
        asynchronous=True,
    )
    with driven_by_hand(family_machine(impl)(contend_target)) as m:
        m.acquire(client=0, stall=False, stall_inside=None, crash_after=None, extend=False)
        paused = m.scheduler.clients[0]
        assert paused.status is Status.READY  # about to send its SET NX, and never let
        waited = m.scheduler.waited
        outcome = m.run_alone(1, lambda: _through_a_thread(m.connections[1]), "a round trip after a thread")
        assert outcome.error is None and outcome.value is True
        assert m.scheduler.clients[1].children[0].status is Status.ENDED
        assert paused.status is Status.READY  # paused all along
        assert m.scheduler.waited == waited  # the paused client did not wait: the harness held it


def test_a_client_that_spins_is_still_a_livelock(contend_target):
    """The rule still bites: a client that sends for ever without sleeping is failed for
    progress once `max_steps` round trips pass with no client waking from a sleep."""
    impl = SimpleNamespace(
        name="under-test",
        family="single_flight",
        factory=self_serving_flight.make,
        claims=frozenset({RUNS_ONCE, SHARED_RESULT, LEADER_FAILURE}),
    )
    m = family_machine(impl)(contend_target)
    conn = m.connections[0]

    def spin() -> None:
        while True:
            conn.ping()

    try:
        m.start(0, spin, "spin()")
        with pytest.raises(PropertyViolated) as info:
            m.finish_all(max_steps=50)
        assert info.value.property == "progress"
        assert "50 round trips in a row with no client waking from a sleep" in info.value.detail
    finally:
        m.teardown()


class _Drawn:
    """Stands for Hypothesis's data object in a rule called by hand: each label's value."""

    def __init__(self, **values: object) -> None:
        self.values = values

    def draw(self, strategy: object, label: str = "") -> object:
        return self.values[label.replace(" ", "_")]


def _a_waiter_behind_a_holder(m) -> None:
    """c0 holds the lock (its release not yet sent); c1 is in acquire(timeout=0.2), refused once."""
    m.acquire(client=0, stall=False, stall_inside=None, crash_after=None, extend=False)
    step_while(m, 0, "acquire")
    m.acquire(client=0, stall=False, stall_inside=None, crash_after=None, extend=False)
    assert m.in_flight[1].startswith("acquire") and m.in_flight[0].startswith("release")
    _step(m, 1)  # its try: refused


@pytest.mark.parametrize(("module", "caught"), [(wall_deadline_lock, True), (raising_lock, False)])
def test_a_waiter_whose_wall_clock_is_set_back_keeps_its_timeout(contend_target, module, caught):
    """The waiter's wall clock is set back 20 s while it waits and the holder is slow: it polls
    on alone, and its own virtual time is counted (run alone, its sleeps are its waits). A
    deadline read off the wall clock overruns the timeout and is failed for progress; one read
    off a monotonic clock gives up in time."""
    impl = SimpleNamespace(
        name="under-test",
        family="lock",
        factory=module.make,
        claims=frozenset({MUTUAL_EXCLUSION, SAFE_RELEASE, CRASH_LIVENESS}),
    )
    with driven_by_hand(family_machine(impl)(contend_target)) as m:
        _a_waiter_behind_a_holder(m)
        drawn = _Drawn(during_an_acquire=True, client=1)
        if caught:
            with pytest.raises(PropertyViolated) as info:
                m.skew_clock(drawn, ahead=False)
            assert info.value.property == PROGRESS
            assert "c1's acquire(timeout=0.2) was still waiting" in info.value.detail
            assert "wall clocks skewed: c1 -20 s" in info.value.detail
        else:
            m.skew_clock(drawn, ahead=False)
            assert 1 not in m.in_flight  # it gave up: acquire returned False
            assert m.scheduler.clients[1].outcome.value is False
            assert m.in_flight[0].startswith("release")  # the holder was held all along


def test_a_probe_runs_while_another_clients_renewer_is_due(contend_target):
    """The scoreboard's python-redis-lock-renewal row (issue 42): c0 holds with auto_renewal, its
    renewer thread asleep in Event.wait; a clock jump past the lease (a stale extend's "pauses
    until its own lease must have run out") leaves that renewer due, ready to run, and the probe
    acquires alone, starting a renewer of its own, then releases (joins it). Before the fix of
    the same commit as the test above, step_alone took no step at all while another client was
    ready ("probe release() did not finish in 200 round trips on its own": the full boards of
    issue 42, 3 of 3); the library is not at fault: its renewer ends at its next wake."""
    adapter = pytest.importorskip("contend.adapters.python_redis_lock")
    impl = SimpleNamespace(
        name="python-redis-lock-renewal",
        family="lock",
        factory=adapter.auto_renewal_factory,
        claims=frozenset({MUTUAL_EXCLUSION, SAFE_RELEASE, CRASH_LIVENESS}),
    )
    with driven_by_hand(family_machine(impl)(contend_target)) as m:
        holder = m.locks[0]
        assert m.run_alone(0, lambda: holder.acquire(blocking=False), "take it").value is True
        renewer = m.scheduler.clients[0].children[0]
        m.start(0, holder.release, "give it back")  # asleep in the join of its renewer
        m.scheduler.advance(2 * m.ttl, note="past the lease: c0 and its renewer are due")
        due = m.scheduler.runnable(among=[0, renewer.index])
        assert due, "another client ready, paused while the probe runs alone"
        assert m.probe_acquires()  # acquired, and released (its own renewer joined) on its own
        assert m.scheduler.clients[m.probe].status is Status.IDLE
