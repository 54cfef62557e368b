"""Seed 001's examples, ported to pytest: SETNX, SET NX EX, the counter lock, the "ダメな例", and
ExclusiveAccess, whose waiters share the leader's result; then the same scenario done right by
SingleFlight across processes. The post's 2 s TTL and 1 s API become 0.2–0.3 s here.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import threading
import time

import pytest
import redis

from contend.check.burst import burst
from contend.impl.locks.errors import LeaderFailedError, LockNotOwnedError, SingleFlightTimeout
from contend.impl.locks.exists_then_set import ExistsThenSetLock
from contend.impl.locks.incr_counter import CounterLock
from contend.impl.locks.set_nx_ex import SetNxExLock
from contend.impl.locks.single_flight import ExclusiveAccess, SharedMemoryFlight, SingleFlight, digest


@pytest.fixture(name="new_client")
def new_client_fixture(contend_target):
    """Make clients of their own (closed after the test)."""
    made = []

    def make():
        made.append(contend_target.client())
        return made[-1]

    yield make
    for c in made:
        c.close()


def test_setnx_sets_only_when_absent(client, ns):
    key = ns.key("key1")
    assert client.setnx(key, "true") is True
    assert client.setnx(key, "true") is False


def test_set_nx_ex_lock_expires_by_itself(client, ns):
    key = ns.key("key1")
    first, second = SetNxExLock(client, key, expires_in=0.2), SetNxExLock(client, key, expires_in=0.2)
    assert first.acquire(blocking=False)
    assert not second.acquire(blocking=False)
    assert client.get(key) == b"true"
    time.sleep(0.25)
    assert client.get(key) is None
    assert second.acquire(blocking=False)
    second.release()
    assert client.get(key) is None


def test_set_nx_ex_release_deletes_whoever_holds_it(client, ns):
    """The flaw kept on purpose: after expiry, a plain DEL removes the next holder's lock."""
    key = ns.key("key1")
    a, b, c = (SetNxExLock(client, key, expires_in=0.1) for _ in range(3))
    assert a.acquire(blocking=False)
    time.sleep(0.15)
    assert b.acquire(blocking=False)
    a.release()  # A's lease expired long ago; its DEL hits B's lock
    assert c.acquire(blocking=False), "C got in while B still believes it holds the lock"


def test_set_nx_ex_release_without_acquire_raises(client, ns):
    with pytest.raises(LockNotOwnedError):
        SetNxExLock(client, ns.key("key1")).release()


def test_counter_lock_count_next(client, ns):
    """The post's sequence: 1, 2; DEL; 1, 2."""
    key = ns.key("key1")
    lock = CounterLock(client, key, expires_in=2)
    assert [lock.count_next(), lock.count_next()] == [1, 2]
    client.delete(key)
    assert [lock.count_next(), lock.count_next()] == [1, 2]
    assert 0 < client.pttl(key) <= 2000


def test_counter_lock_whoever_gets_one_wins(client, ns):
    key = ns.key("key1")
    a, b = CounterLock(client, key, 1), CounterLock(client, key, 1)
    assert a.acquire(blocking=False)
    assert not b.acquire(blocking=False)
    a.release()
    assert b.acquire(blocking=False)


def test_counter_lock_waiters_keep_a_dead_holders_lock_alive(client, ns):
    """The flaw kept on purpose: every losing INCR also runs EXPIRE, pushing the TTL out."""
    key = ns.key("key1")
    assert CounterLock(client, key, expires_in=0.2).acquire(blocking=False)  # then the holder dies
    waiter = CounterLock(client, key, expires_in=0.2)
    deadline = time.monotonic() + 0.6  # three TTLs
    while time.monotonic() < deadline:
        assert not waiter.try_acquire()
        time.sleep(0.05)
    assert client.pttl(key) > 100


def test_exists_then_set_lets_two_clients_in(new_client, ns):
    """The post's ダメな例: clients released together all see the key absent; some round shows it."""
    clients = [new_client() for _ in range(16)]
    for c in clients:
        c.ping()
    for rnd in range(20):
        locks = [ExistsThenSetLock(c, ns.key("key1", rnd)) for c in clients]
        winners = sum(o.value for o in burst([lambda lk=lk: lk.acquire(blocking=False) for lk in locks]))
        if winners > 1:
            return
    pytest.fail("20 bursts of 16 clients never let two clients in")


def test_exists_then_set_has_no_ttl(client, ns):
    key = ns.key("key1")
    assert ExistsThenSetLock(client, key).acquire(blocking=False)
    assert client.pttl(key) == -1  # a holder that dies now blocks everyone for ever


class API:
    """The post's API: sums the values in `seconds`, stores the answer in shared memory, counts calls."""

    def __init__(self, values, answer, calls, key, seconds=0.3):
        self.values, self.answer, self.calls, self.key, self.seconds = values, answer, calls, key, seconds

    def call(self):
        time.sleep(self.seconds)
        self.answer[self.key] = sum(self.values)
        with self.calls["lock"]:
            self.calls["n"] += 1


def _seed_scenario(new_client, key, exclusive):
    """5 threads, each with its own client as in the post; returns (results, API calls)."""
    answer: dict = {}
    calls = {"n": 0, "lock": threading.Lock()}
    results = []
    clients = [new_client() for _ in range(5)]

    def thread(client):
        values = [1, 2]
        if not answer.get(key):
            api = API(values, answer, calls, key)
            if exclusive:
                ExclusiveAccess(client, key, expires_in=2, poll_sec=0.05).call(api.call)
            else:
                api.call()
        results.append(answer[key])

    for c in clients:
        c.ping()
    outcomes = burst([lambda c=c: thread(c) for c in clients], timeout=10)
    assert all(o.ok for o in outcomes), [o.error for o in outcomes]
    return results, calls["n"]


def test_without_exclusive_control_the_api_runs_five_times(new_client, ns):
    results, calls = _seed_scenario(new_client, ns.key(digest([1, 2])), exclusive=False)
    assert results == [3] * 5
    assert calls == 5


def test_exclusive_access_runs_the_api_once(new_client, ns):
    """The post's result: 5 threads, the API called once, all 5 print 3 (shared process memory)."""
    results, calls = _seed_scenario(new_client, ns.key(digest([1, 2])), exclusive=True)
    assert results == [3] * 5
    assert calls == 1


def test_exclusive_access_waiters_get_nothing_when_the_leader_raises(new_client, ns):
    """The flaw kept on purpose: the leader's DEL is skipped, waiters leave when the TTL ends, empty-handed."""
    key = ns.key("api")
    started = threading.Event()
    # A 1 s lease: the waiter must call while the leader's lock is still there, on a busy machine too.
    leader = SharedMemoryFlight(new_client(), key, 1_000, poll_sec=0.02)
    waiter = SharedMemoryFlight(new_client(), key, 1_000, poll_sec=0.02)

    def fails():
        started.set()
        time.sleep(0.05)
        raise ValueError("500")

    thread = threading.Thread(target=_call_quietly, args=(leader, fails))
    thread.start()
    assert started.wait(5)
    assert waiter.call(lambda: 3) is None
    thread.join(5)


def _call_quietly(flight, fn):
    with contextlib.suppress(ValueError):
        flight.call(fn)


def test_digest_is_the_posts_md5_of_the_values():
    assert digest([1, 2]) == digest([1, 2]) != digest([2, 1])
    assert len(digest([1, 2])) == 32


def _flight_process(url, key, counter_key, results):
    """A process of its own: SingleFlight.call of an API that counts its runs in Redis."""
    client = redis.Redis.from_url(url)

    def api():
        client.incr(counter_key)
        time.sleep(0.3)
        return sum([1, 2])

    results.put(SingleFlight(client, key, lease_ms=2_000, wait_timeout=10).call(api))
    client.close()


@pytest.mark.slow
def test_single_flight_five_processes_share_one_result(contend_target, client, ns):
    """Seed 001's scenario done right: 5 processes at once, the API runs once, all 5 get 3 through Redis."""
    key, counter_key = ns.key(digest([1, 2])), ns.key("api-calls")
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    procs = [
        context.Process(target=_flight_process, args=(contend_target.url, key, counter_key, results))
        for _ in range(5)
    ]
    for p in procs:
        p.start()
    try:
        got = [results.get(timeout=20) for _ in procs]
        for p in procs:
            p.join(10)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
    assert got == [3] * 5
    assert int(client.get(counter_key)) == 1


def test_single_flight_threads_share_one_result(new_client, ns):
    key = ns.key(digest([1, 2]))
    calls = []
    clients = [new_client() for _ in range(5)]
    for c in clients:
        c.ping()

    def api():
        calls.append(1)
        time.sleep(0.2)
        return 3

    outcomes = burst([lambda c=c: SingleFlight(c, key).call(api) for c in clients], timeout=10)
    assert [o.value for o in outcomes] == [3] * 5
    assert len(calls) == 1


def test_single_flight_waiters_get_the_leaders_error(new_client, ns):
    key = ns.key("api")
    started = threading.Event()

    def fails():
        started.set()
        time.sleep(0.1)
        raise ValueError("the API answered 500")

    leader_error = []

    def lead():
        try:
            SingleFlight(new_client(), key).call(fails)
        except ValueError as exc:
            leader_error.append(exc)

    thread = threading.Thread(target=lead)
    thread.start()
    assert started.wait(5)
    with pytest.raises(LeaderFailedError, match="ValueError: the API answered 500"):
        SingleFlight(new_client(), key).call(lambda: "never run")
    thread.join(5)
    assert leader_error


def test_single_flight_waiting_is_bounded(new_client, ns):
    """A leader that keeps its lease but never finishes: waiters give up with a clear error."""
    key = ns.key("api")
    release = threading.Event()
    started = threading.Event()

    def hangs():
        started.set()
        release.wait(10)
        return 3

    thread = threading.Thread(target=lambda: SingleFlight(new_client(), key, lease_ms=150).call(hangs))
    thread.start()
    try:
        assert started.wait(5)
        start = time.monotonic()
        with pytest.raises(SingleFlightTimeout, match=r"no result within 0\.3 s"):
            SingleFlight(new_client(), key, wait_timeout=0.3).call(lambda: "never run")
        assert time.monotonic() - start < 1.0
    finally:
        release.set()
        thread.join(5)


def _dying_leader(url, key, started_key):
    client = redis.Redis.from_url(url)

    def api():
        client.set(started_key, 1)
        time.sleep(30)  # killed long before
        return 0

    SingleFlight(client, key, lease_ms=300).call(api)


@pytest.mark.slow
def test_single_flight_leader_killed_waiters_take_over(contend_target, new_client, client, ns):
    """The leader's process is killed mid-computation: its lease runs out and a waiter leads instead."""
    key, started_key = ns.key("api"), ns.key("started")
    context = multiprocessing.get_context("fork")
    leader = context.Process(target=_dying_leader, args=(contend_target.url, key, started_key))
    leader.start()
    try:
        deadline = time.monotonic() + 10
        while not client.exists(started_key) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert client.exists(started_key)
        waiters = [SingleFlight(new_client(), key, lease_ms=300, wait_timeout=5) for _ in range(3)]
        start = time.monotonic()
        killer = threading.Timer(0.2, lambda: os.kill(leader.pid, signal.SIGKILL))
        killer.start()
        outcomes = burst([lambda w=w: w.call(lambda: 3) for w in waiters], timeout=10)
        killer.join()
    finally:
        leader.kill()
        leader.join(5)
    assert [o.value for o in outcomes] == [3, 3, 3]
    assert time.monotonic() - start < 3


@pytest.mark.parametrize("bad", [0, -1, None, 1.5])
def test_single_flight_refuses_bad_leases(client, ns, bad):
    with pytest.raises(ValueError):
        SingleFlight(client, ns.key("api"), lease_ms=bad)


def test_single_flight_needs_a_bounded_wait(client, ns):
    with pytest.raises(ValueError, match="bounded"):
        SingleFlight(client, ns.key("api"), wait_timeout=None)
