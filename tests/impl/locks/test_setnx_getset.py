"""Seed 002's unittest for its Mutex, ported to pytest, plus its multi-process test for every correct lock.

The seed's tests sleep for real (10.5 s in test_unlock, 1.5 s of retries in
test_expire and test_with). Here the Mutex gets a fake clock and a fake sleep
that advances it, so the same assertions hold in no time: the expiry values
written to Redis and the client's idea of "now" both come from that clock.
The seed's key is "spam" and its counter "ham"; here they live under the
test's namespace, and its tearDown's unconditional delete of 'ham' is the
namespace cleanup.

The multi-process test runs 10 processes × 100 locked GET/SET increments (the
seed runs 20: half of them contend just as well and cost the suite half the
CPU), for the seed's Mutex and for `token` and `fenced`; each process makes its
own client from the server's URL. The seed retries every 0.25 s;
here every 5 ms (and up to 30 s), so the run takes seconds, not minutes.
"""

from __future__ import annotations

import multiprocessing
import time

import pytest
import redis

from contend.impl.locks.fenced import FencedLock, FencedResource
from contend.impl.locks.setnx_getset import (
    DuplicateLockError,
    ExpiredLockError,
    HasNotLockError,
    LockError,
    Mutex,
    MutexError,
)
from contend.impl.locks.token import TokenLock

PROCS, COUNTER = 10, 100


class FakeClock:
    """A wall clock that only moves when someone sleeps on it."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock():
    return FakeClock()


@pytest.fixture
def key(ns):
    return ns.key("spam")


@pytest.fixture
def make(client, key, clock):
    def make(**kwargs):
        return Mutex(client, key, clock=clock, sleep=clock.sleep, **kwargs)

    return make


@pytest.fixture
def mutex(make):
    mutex = make()
    yield mutex
    if mutex._lock:
        mutex.unlock()


def test_lock(mutex):
    mutex.lock()
    assert mutex._r.get(mutex._key) is not None

    with pytest.raises(DuplicateLockError):
        mutex.lock()


def test_unlock(mutex, clock):
    test_lock(mutex)
    mutex.unlock()
    assert mutex._r.get(mutex._key) is None

    with pytest.raises(HasNotLockError):
        mutex.unlock()

    test_lock(mutex)
    clock.sleep(10.5)
    with pytest.raises(ExpiredLockError):
        mutex.unlock()
    mutex._lock = None  # forced reset, as in the seed


def test_expire(mutex, make, clock):
    mutex1 = mutex
    mutex2 = make(expire=2)
    mutex2.lock()  # holds for 2 s

    start = clock.now
    with pytest.raises(LockError):
        mutex1.lock()  # 6 retries × 0.25 s = 1.5 s
    assert clock.now - start == pytest.approx(1.5)

    clock.sleep(0.6)
    mutex1.lock()
    assert mutex1._r.get(mutex1._key) is not None


def test_with(mutex, make):
    mutex1 = mutex
    with mutex1:
        assert mutex1._r.get(mutex1._key) is not None
    assert mutex1._r.get(mutex1._key) is None

    mutex2 = make(expire=2)
    mutex2.lock()
    with pytest.raises(LockError), mutex1:  # 6 retries × 0.25 s = 1.5 s
        pass
    mutex2.unlock()

    with mutex1, pytest.raises(DuplicateLockError), mutex1:
        pass


def test_decorator(mutex):
    @mutex
    def egg():
        assert mutex._r.get(mutex._key) is not None
        return "spam"

    assert egg() == "spam"
    assert egg.__name__ == "egg"
    assert mutex._r.get(mutex._key) is None


def test_exceptions_are_mutex_errors_that_name_the_key(mutex, key):
    for error in (DuplicateLockError(key), HasNotLockError(key), ExpiredLockError(key, 10.5), LockError(key)):
        assert isinstance(error, MutexError)
        assert key in str(error)
    with pytest.raises(HasNotLockError, match="without a successful lock"):
        mutex.unlock()


@pytest.mark.parametrize("bad", [0, -1, None, "10", True])
def test_expire_must_be_a_positive_number(client, key, bad):
    with pytest.raises(ValueError, match="expire"):
        Mutex(client, key, expire=bad)


def test_empty_key_is_refused(client):
    with pytest.raises(ValueError, match="empty"):
        Mutex(client, "")


def test_with_propagates_the_blocks_exception_and_unlocks(mutex):
    with pytest.raises(KeyError), mutex:
        raise KeyError("boom")
    assert mutex._r.get(mutex._key) is None


def _increments(kind: str, url: str, lock_key: str, counter_key: str) -> None:
    """One of the seed's processes: COUNTER locked read-modify-write increments."""
    client = redis.Redis.from_url(url)
    if kind == "setnx_getset":
        mutex = Mutex(client, lock_key, retry_count=6_000, retry_sleep_sec=0.005)
        for _ in range(COUNTER):
            mutex.lock()
            ham = client.get(counter_key) or 0
            client.set(counter_key, int(ham) + 1)
            mutex.unlock()
    elif kind == "token":
        lock = TokenLock(client, lock_key, 10_000, retry_interval=0.002, max_retry_interval=0.01)
        for _ in range(COUNTER):
            assert lock.acquire(timeout=30)
            ham = client.get(counter_key) or 0
            client.set(counter_key, int(ham) + 1)
            lock.release()
    else:
        fenced = FencedLock(client, lock_key, 10_000, retry_interval=0.002, max_retry_interval=0.01)
        resource = FencedResource(client, counter_key)
        for _ in range(COUNTER):
            assert fenced.acquire(timeout=30)
            assert fenced.fencing_token is not None
            resource.write(fenced.fencing_token, int(resource.read() or 0) + 1)
            fenced.release()
    client.close()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["setnx_getset", "token", "fenced"])
def test_multi_process(kind, contend_target, client, ns):
    """10 processes × 100 locked increments: exactly 1,000."""
    lock_key, counter_key = ns.key("spam"), ns.key("ham")
    context = multiprocessing.get_context("fork")
    procs = [
        context.Process(target=_increments, args=(kind, contend_target.url, lock_key, counter_key))
        for _ in range(PROCS)
    ]
    for p in procs:
        p.start()
    try:
        for p in procs:
            p.join(60)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
    assert [p.exitcode for p in procs] == [0] * PROCS
    raw = client.hget(counter_key, "value") if kind == "fenced" else client.get(counter_key)
    assert int(raw) == PROCS * COUNTER
