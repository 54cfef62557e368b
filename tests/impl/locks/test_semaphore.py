"""Counting semaphores with leases, and the fair one that grants in request order."""

from __future__ import annotations

import threading
import time

import pytest

from contend.impl.locks.errors import LockError, LockNotOwnedError
from contend.impl.locks.semaphore import FairSemaphore, Semaphore


@pytest.fixture
def key(ns):
    return ns.key("sem")


@pytest.fixture(params=[Semaphore, FairSemaphore], ids=["semaphore", "fair"])
def make(request, client, key):
    return lambda limit=3, ttl_ms=1_000, c=client: request.param(c, key, limit, ttl_ms)


def test_at_most_limit_holders(make):
    sems = [make() for _ in range(4)]
    assert [s.acquire(blocking=False) for s in sems] == [True, True, True, False]
    assert sems[0].holders() == 3
    sems[1].release()
    assert sems[3].acquire(blocking=False)


def test_an_expired_lease_frees_its_slot_and_cannot_be_released(make):
    short, long_ = make(limit=1, ttl_ms=100), make(limit=1)
    assert short.acquire(blocking=False)
    assert not long_.acquire(blocking=False)
    time.sleep(0.15)
    assert long_.acquire(blocking=False)
    with pytest.raises(LockNotOwnedError, match="expired after 100 ms"):
        short.release()
    long_.release()


def test_extend(make):
    sem = make(limit=1, ttl_ms=150)
    sem.acquire()
    time.sleep(0.1)
    assert sem.extend(1_000)
    time.sleep(0.1)
    other = make(limit=1)
    assert not other.acquire(blocking=False), "the extended lease ran out at its old expiry"
    sem.release()
    with pytest.raises(LockNotOwnedError):
        sem.extend()


def test_blocking_acquire_waits_for_a_release(make):
    holder, waiter = make(limit=1, ttl_ms=5_000), make(limit=1)
    holder.acquire()
    threading.Timer(0.1, holder.release).start()
    start = time.monotonic()
    assert waiter.acquire(timeout=2)
    assert 0.08 < time.monotonic() - start < 1.0


def test_blocking_acquire_times_out(make):
    holder, waiter = make(limit=1, ttl_ms=5_000), make(limit=1)
    holder.acquire()
    start = time.monotonic()
    assert waiter.acquire(timeout=0.2) is False
    assert time.monotonic() - start < 0.6
    holder.release()
    assert waiter.acquire(blocking=False), "a timed-out waiter must not keep a place in line"


def test_acquire_while_holding_is_refused(make):
    sem = make()
    sem.acquire()
    with pytest.raises(LockError, match="already holds"):
        sem.acquire()


@pytest.mark.parametrize("limit", [0, -1, None, 1.5])
def test_limit_must_be_a_whole_number(make, limit):
    with pytest.raises(ValueError, match="limit"):
        make(limit=limit)


def test_the_keys_expire_when_everyone_is_gone(make, client, key):
    sem = make(ttl_ms=200)
    sem.acquire()
    keys = sorted(k for k in client.scan_iter(match=key + "*"))
    assert keys and all(0 < client.pttl(k) <= 200 for k in keys)


def _queue(client_factory, key, n, ttl_ms=5_000, hold=None):
    """Start n waiters one after another; each is in line before the next starts; each holds its
    slot 10 ms (or, with `hold`, until that event is set). Returns (threads, order)."""
    order = []
    guard = threading.Lock()
    threads = []
    for i in range(n):
        sem = FairSemaphore(client_factory(), key, 1, ttl_ms)

        def wait(i=i, sem=sem):
            if sem.acquire(timeout=10):
                with guard:
                    order.append(i)
                if hold is None:
                    time.sleep(0.01)
                else:
                    hold.wait(10)
                sem.release()

        t = threading.Thread(target=wait)
        t.start()
        threads.append(t)
        deadline = time.monotonic() + 5
        while sem.client.zcard(sem.keys[0]) < i + 2 and time.monotonic() < deadline:  # holder + i + 1 queued
            time.sleep(0.001)
    return threads, order


@pytest.fixture
def new_client(contend_target):
    made = []

    def make():
        made.append(contend_target.client())
        return made[-1]

    yield make
    for c in made:
        c.close()


def test_fair_semaphore_grants_in_request_order(client, key, new_client):
    holder = FairSemaphore(client, key, 1, 5_000)
    holder.acquire()
    threads, order = _queue(new_client, key, 6)
    holder.release()
    for t in threads:
        t.join(10)
    assert order == list(range(6))


def test_fair_semaphore_a_newcomer_does_not_overtake_the_line(client, key, new_client):
    holder = FairSemaphore(client, key, 1, 5_000)
    holder.acquire()
    hold = threading.Event()  # the waiter keeps the slot until the newcomer has tried
    threads, order = _queue(new_client, key, 1, hold=hold)
    holder.release()
    newcomer = FairSemaphore(new_client(), key, 1, 5_000)
    assert not newcomer.acquire(blocking=False), "the slot belongs to the first in line"
    hold.set()
    for t in threads:
        t.join(10)
    assert order == [0]
    assert newcomer.acquire(blocking=False)


def test_fair_semaphore_a_dead_waiter_drops_out_of_line(client, key, new_client):
    holder = FairSemaphore(client, key, 1, 5_000)
    holder.acquire()
    dead = FairSemaphore(new_client(), key, 1, 150)
    FairSemaphore.ENQUEUE(dead.client, dead.keys, ["dead", 1, 150, 1])  # queued, then never polls again
    holder.release()
    waiter = FairSemaphore(new_client(), key, 1, 1_000)
    start = time.monotonic()
    assert waiter.acquire(timeout=2)
    assert 0.1 < time.monotonic() - start < 1.0
