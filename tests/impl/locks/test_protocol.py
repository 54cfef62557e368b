"""Every lock in the catalog follows the lock protocol, refuses bad TTLs and keys, and says what it claims."""

from __future__ import annotations

import pytest

from contend.impl import catalog
from contend.impl.locks.errors import LockNotOwnedError
from contend.impl.locks.exists_then_set import ExistsThenSetLock
from contend.impl.locks.incr_counter import CounterLock
from contend.impl.locks.redis_objects import RedisObjectsLock
from contend.impl.locks.semaphore import FairSemaphore, Semaphore
from contend.impl.locks.set_nx_ex import SetNxExLock
from contend.impl.locks.single_flight import ExclusiveAccess
from contend.subject.protocols import check_factory_signature, check_object, takes_clock

LOCKS = catalog.family("lock") + catalog.family("semaphore")
FLIGHTS = catalog.family("single_flight")
BAD_TTLS = [0, -1, -1000, None, 1.5, True, "1000"]


def ids(impls):
    return [pytest.param(i, id=i.name) for i in impls]


@pytest.mark.parametrize("impl", ids(LOCKS))
def test_the_factory_builds_a_protocol_object(impl, client, ns):
    kind = impl.family
    check_factory_signature(impl.factory, kind, impl.name)
    lock = impl.factory(client, ns.key("lock"), 1_000)
    check_object(lock, kind, impl.name)
    assert lock.acquire(blocking=False) is True
    assert impl.factory(client, ns.key("lock"), 1_000).acquire(blocking=False) is False
    lock.release()


@pytest.mark.parametrize("impl", ids(LOCKS + FLIGHTS))
@pytest.mark.parametrize("bad", BAD_TTLS, ids=repr)
def test_a_bad_ttl_is_a_value_error(impl, bad, client, ns):
    with pytest.raises(ValueError) as info:
        impl.factory(client, ns.key("lock"), bad)
    assert "ttl" in str(info.value) or "lease" in str(info.value)
    assert ns.count() == 0


@pytest.mark.parametrize("impl", ids(LOCKS + FLIGHTS))
@pytest.mark.parametrize("bad", ["", b"", None, 42])
def test_a_bad_key_is_a_value_error(impl, bad, client):
    with pytest.raises(ValueError, match="key"):
        impl.factory(client, bad, 1_000)


@pytest.mark.parametrize("impl", ids(LOCKS))
def test_release_of_a_lock_never_acquired_raises_lock_not_owned(impl, client, ns):
    lock = impl.factory(client, ns.key("lock"), 1_000)
    with pytest.raises(LockNotOwnedError):
        lock.release()


@pytest.mark.parametrize(
    "make",
    [
        lambda c, k, t: SetNxExLock(c, k, expires_in=t),
        lambda c, k, t: CounterLock(c, k, expires_in=t),
        lambda c, k, t: ExclusiveAccess(c, k, expires_in=t),
        lambda c, k, t: RedisObjectsLock(c, k, expiration=t),
        lambda c, k, t: Semaphore(c, k, 1, t),
        lambda c, k, t: FairSemaphore(c, k, 1, t),
    ],
    ids=["SetNxExLock", "CounterLock", "ExclusiveAccess", "RedisObjectsLock", "Semaphore", "FairSemaphore"],
)
@pytest.mark.parametrize("bad", [0, -1, -0.5, True])
def test_the_seed_classes_refuse_a_ttl_that_would_delete_the_key(make, bad, client, ns):
    with pytest.raises(ValueError):
        make(client, ns.key("lock"), bad)


def test_why_a_ttl_must_be_positive(client, ns):
    """The bug the checks guard against: PEXPIRE with -1 silently deletes the key."""
    key = ns.key("lock")
    client.set(key, "token")
    client.pexpire(key, -1)
    assert not client.exists(key)


def test_exists_then_set_takes_no_ttl(client, ns):
    assert ExistsThenSetLock(client, ns.key("lock")).acquire(blocking=False)
    assert client.pttl(ns.key("lock")) == -1


def test_only_client_clock_locks_take_a_clock():
    clocked = {i.name for i in LOCKS if takes_clock(i.factory)}
    assert clocked == {"setnx_getset", "redis_objects", "setnx_del"}
