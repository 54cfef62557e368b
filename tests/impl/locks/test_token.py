"""The correct leases: `token` (SET NX PX + compare-and-delete) and `fenced` (plus fencing tokens)."""

from __future__ import annotations

import time

import pytest
import redis

from contend.impl.locks.errors import LockError, LockNotOwnedError, LockTimeoutError, StaleFencingTokenError
from contend.impl.locks.fenced import FencedLock, FencedResource
from contend.impl.locks.token import TokenLock
from contend.impl.roundtrip import LuaScript, call


@pytest.fixture
def key(ns):
    return ns.key("lock")


@pytest.fixture(params=[TokenLock, FencedLock], ids=["token", "fenced"])
def make(request, client, key):
    return lambda ttl_ms=1_000, c=client: request.param(c, key, ttl_ms)


def test_one_holder_at_a_time(make, client, key):
    a, b = make(), make()
    assert a.acquire(blocking=False)
    assert not b.acquire(blocking=False)
    assert client.get(key) == a.token.encode()
    a.release()
    assert client.get(key) is None
    assert b.acquire(blocking=False)


def test_release_twice_raises(make):
    lock = make()
    lock.acquire()
    lock.release()
    with pytest.raises(LockNotOwnedError, match="does not hold"):
        lock.release()


def test_release_after_expiry_raises_and_spares_the_successor(make, client, key):
    a, b = make(100), make(1_000)
    assert a.acquire(blocking=False)
    time.sleep(0.15)
    assert b.acquire(blocking=False)
    with pytest.raises(LockNotOwnedError, match="expired after 100 ms or was taken"):
        a.release()
    assert client.get(key) == b.token.encode()
    b.release()


def test_extend_keeps_the_lease_and_fails_once_lost(make, client, key):
    lock = make(150)
    lock.acquire()
    assert lock.extend(1_000) is True
    assert client.pttl(key) > 500
    client.delete(key)  # as if it had expired
    with pytest.raises(LockNotOwnedError):
        lock.extend()
    with pytest.raises(LockNotOwnedError):
        lock.release()


def test_extend_refuses_a_bad_ttl(make):
    lock = make()
    lock.acquire()
    with pytest.raises(ValueError):
        lock.extend(0)
    lock.release()


def test_blocking_acquire_gives_up_after_its_timeout(make):
    holder, waiter = make(5_000), make()
    holder.acquire()
    start = time.monotonic()
    assert waiter.acquire(timeout=0.2) is False
    assert 0.19 < time.monotonic() - start < 0.6
    holder.release()


def test_blocking_acquire_gets_the_lock_when_the_lease_expires(make):
    holder, waiter = make(150), make()
    holder.acquire()
    start = time.monotonic()
    assert waiter.acquire(timeout=2)
    assert time.monotonic() - start < 1.0


def test_acquire_while_holding_is_refused(make):
    lock = make()
    lock.acquire()
    with pytest.raises(LockError, match="already holds"):
        lock.acquire()


def test_context_manager(make, client, key):
    with make() as lock:
        assert client.get(key) == lock.token.encode()
    assert client.get(key) is None


def test_context_manager_timeout(make, client, key):
    holder = make(5_000)
    holder.acquire()
    waiter = make()
    waiter.acquire = lambda *a, **k: False
    with pytest.raises(LockTimeoutError), waiter:
        pass


def test_negative_timeout_is_refused(make):
    with pytest.raises(ValueError, match="timeout"):
        make().acquire(timeout=-1)


def test_works_with_decoded_responses(contend_target, key):
    client = contend_target.client(decode_responses=True)
    try:
        lock = FencedLock(client, key, 1_000)
        assert lock.acquire(blocking=False)
        assert lock.fencing_token == 1
        lock.release()
    finally:
        client.close()


def test_fencing_tokens_grow_with_every_grant(client, key):
    tokens = []
    for _ in range(5):
        lock = FencedLock(client, key, 1_000)
        assert lock.acquire(blocking=False)
        tokens.append(lock.fencing_token)
        lock.release()
    assert tokens == [1, 2, 3, 4, 5]
    assert not client.exists(key) and int(client.get(f"{key}:fence")) == 5


def test_a_refused_acquire_takes_no_token(client, key):
    a, b = FencedLock(client, key, 1_000), FencedLock(client, key, 1_000)
    a.acquire()
    assert not b.acquire(blocking=False)
    assert b.fencing_token is None
    a.release()
    b.acquire()
    assert b.fencing_token == 2


def test_fenced_resource_refuses_a_paused_holders_late_write(client, key, ns):
    resource = FencedResource(client, ns.key("resource"))
    a = FencedLock(client, key, 100)
    a.acquire()
    resource.write(a.fencing_token, "from A")
    resource.write(a.fencing_token, "from A again")  # the same token may write again
    time.sleep(0.15)  # A pauses past its lease
    b = FencedLock(client, key, 1_000)
    assert b.acquire(blocking=False)
    resource.write(b.fencing_token, "from B")
    with pytest.raises(StaleFencingTokenError, match=r"token 1 refused; token 2 already wrote"):
        resource.write(a.fencing_token, "late write from A")
    assert resource.read() == b"from B"
    assert resource.highest_token() == 2


@pytest.mark.parametrize("bad", [0, -1, None, True, "1"])
def test_fenced_resource_refuses_bad_tokens(client, ns, bad):
    with pytest.raises(ValueError):
        FencedResource(client, ns.key("resource")).write(bad, "x")


def test_lua_script_loads_itself_on_a_server_that_lacks_it(contend_private_server):
    """SCRIPT FLUSH only on a server of the test's own."""
    client = redis.Redis.from_url(contend_private_server.url)
    try:
        lock = TokenLock(client, "lock", 1_000)
        lock.acquire()
        client.script_flush()
        lock.release()  # NOSCRIPT, then SCRIPT LOAD and EVALSHA
        assert client.exists("lock") == 0
    finally:
        client.close()


def test_call_returns_raw_replies_and_raises_server_errors(client, key):
    assert call(client, "SET", key, "v", "NX", "PX", 1000) == b"OK"
    assert call(client, "SET", key, "v", "NX", "PX", 1000) is None
    with pytest.raises(redis.ResponseError):
        call(client, "INCR", key)
    assert LuaScript("return ARGV[1]")(client, [], ["x"]) == b"x"
    client.ping()  # the connection went back to the pool in a usable state


def test_call_works_on_a_single_connection_client(contend_target, key):
    client = contend_target.client(single_connection_client=True)
    try:
        lock = TokenLock(client, key, 1_000)
        assert lock.acquire(blocking=False)
        lock.release()
    finally:
        client.close()
