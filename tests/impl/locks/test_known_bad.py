"""Each known-bad lock's documented flaw, shown directly (contend check shows them through the protocol)."""

from __future__ import annotations

import time

import pytest

from contend.check.burst import burst
from contend.impl.locks.errors import LockNotOwnedError
from contend.impl.locks.lock_with_timeout import TimeoutLock, get_lock, lock_with_timeout, rel_lock
from contend.impl.locks.redis_objects import LockTimeout, RedisObjectsLease, RedisObjectsLock
from contend.impl.locks.setnx_del import SetnxDelLock
from contend.impl.locks.setnx_getset import Mutex, MutexLease


@pytest.fixture
def key(ns):
    return ns.key("lock")


def ahead(seconds):
    """A client clock running `seconds` ahead of the real one."""
    return lambda: time.time() + seconds


def test_lock_with_timeout_sets_a_ttl(client, ns):
    assert lock_with_timeout(client, ns.key("job"), timeout=10, prefix="")
    assert 9_000 < client.pttl(ns.key("job")) <= 10_000
    assert not lock_with_timeout(client, ns.key("job"), timeout=10, prefix="")


def test_lock_with_timeout_crash_between_setnx_and_expire_is_never_repaired(client, key):
    """The holder dies after SETNX: `not conn.ttl(...)` is `not -1`, False, so nobody adds the TTL."""
    client.setnx(key, "the dead holder's uuid")  # its EXPIRE never ran
    for _ in range(3):
        assert not lock_with_timeout(client, key, timeout=1, prefix="")
    assert client.ttl(key) == -1, "the repair branch ran after all"


def test_get_lock_and_rel_lock(client, ns):
    name = ns.key("job")
    assert get_lock(client, name, prefix="")
    assert not get_lock(client, name, prefix="")
    assert client.ttl(name) == -1  # the post's first lock has no TTL at all
    assert rel_lock(client, name, prefix="") is True
    assert get_lock(client, name, prefix="")


def test_lock_with_timeout_prefixes_lock_colon_by_default(client, ns):
    name = ns.key("job")
    try:
        assert lock_with_timeout(client, name, timeout=1)
        assert client.exists("lock:" + name)
    finally:
        client.delete("lock:" + name)


@pytest.mark.parametrize("bad", [0, -1, None])
def test_lock_with_timeout_refuses_bad_timeouts(client, key, bad):
    with pytest.raises(ValueError):
        lock_with_timeout(client, key, timeout=bad, prefix="")


def test_timeout_lock_release_deletes_a_successors_lock(client, key):
    a, b = TimeoutLock(client, key, 100), TimeoutLock(client, key, 1_000)
    assert a.acquire(blocking=False)
    time.sleep(0.15)
    assert b.acquire(blocking=False)
    a.release()
    assert not client.exists(key), "A's DEL removed B's lock"


def test_setnx_getset_clock_skew_gives_two_holders(client, key):
    a = Mutex(client, key, expire=10)
    b = Mutex(client, key, expire=10, retry_count=1, clock=ahead(20))
    a.lock()
    b.lock()  # B's clock says A's lock expired 10 s ago: GETSET takes it
    assert a.held and b.held


def test_setnx_getset_without_skew_is_exclusive(client, key):
    a = MutexLease(client, key, 10_000)
    b = MutexLease(client, key, 10_000)
    assert a.acquire(blocking=False)
    assert not b.acquire(blocking=False)
    a.release()
    assert b.acquire(blocking=False)


def test_setnx_getset_expired_lock_is_taken_by_getset(client, key):
    a = MutexLease(client, key, 100)
    b = MutexLease(client, key, 1_000)
    assert a.acquire(blocking=False)
    time.sleep(0.15)
    assert b.acquire(blocking=False)
    with pytest.raises(LockNotOwnedError):  # ExpiredLockError, and no DEL
        a.release()
    assert client.exists(key)
    b.release()


def test_redis_objects_lock_runs_the_block(client, key):
    lock = RedisObjectsLock(client, key, timeout=1, expiration=5)
    assert lock.lock(lambda: client.exists(key)) == 1
    assert not client.exists(key)


def test_redis_objects_times_out_while_held(client, key):
    holder = RedisObjectsLock(client, key, expiration=5)
    clock_now = [time.time()]
    waiter = RedisObjectsLock(
        client,
        key,
        timeout=1,
        expiration=5,
        clock=lambda: clock_now[0],
        sleep=lambda s: clock_now.__setitem__(0, clock_now[0] + s),
    )
    with holder, pytest.raises(LockTimeout, match=r"exceeded 1\.0 sec"):
        waiter.lock(lambda: None)


def test_redis_objects_release_after_expiry_leaves_the_successor_alone(client, key):
    a, b = RedisObjectsLease(client, key, 100), RedisObjectsLease(client, key, 1_000)
    assert a.acquire(blocking=False)
    time.sleep(0.15)
    assert b.acquire(blocking=False)
    a.release()  # its expiry passed: no DEL
    assert client.exists(key)


def test_redis_objects_clock_skew_gives_two_holders(client, key):
    a = RedisObjectsLease(client, key, 10_000)
    b = RedisObjectsLease(client, key, 10_000, clock=ahead(20))
    assert a.acquire(blocking=False)
    assert b.acquire(blocking=False)


def test_redis_objects_without_expiration_is_never_taken_over(client, key):
    RedisObjectsLock(client, key, timeout=0).try_lock()  # holder dies; value "1.0", no TTL
    assert not RedisObjectsLock(client, key, timeout=0).try_lock()
    assert client.ttl(key) == -1


def test_setnx_del_two_clients_both_win_an_expired_lock(contend_target, ns):
    """Seed 004's race: B and C both see the lock expired, C's DEL+SETNX lands, then B's DEL removes it."""
    clients = [contend_target.client() for _ in range(16)]
    try:
        for c in clients:
            c.ping()
        for rnd in range(10):
            key = ns.key("lock", rnd)
            assert SetnxDelLock(clients[0], key, 20).acquire(blocking=False)
            time.sleep(0.03)
            locks = [SetnxDelLock(c, key, 5_000) for c in clients]
            outcomes = burst([lambda lk=lk: lk.acquire(blocking=False) for lk in locks])
            if sum(o.value for o in outcomes) > 1:
                return
        pytest.fail("10 bursts on an expired lock never gave two holders")
    finally:
        for c in clients:
            c.close()
