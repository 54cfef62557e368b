"""The async token lease and its known-bad twin: the protocol, and a release cancelled mid-flight.

The cancellation tests reproduce redis-py issue #3847 at the library level.
A release is cancelled at a chosen await, made deterministic by holding the
only connection of a BlockingConnectionPool (the release waits for it, so the
compare-and-delete has not been sent) or by an Event a wrapped connection sets
once the EVALSHA is written. The early-clear lock is only shown failing in the
first window: once the EVALSHA is written the server normally runs it, and
whether the caller's cancel then lands at all depends on redis-py and Python
(3.11's wait_for, which redis-py's socket_timeout send goes through, can
swallow a cancel that arrives after the write has finished).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import redis
import redis.asyncio

from contend.impl.locks import async_early_clear, async_token
from contend.impl.locks.errors import LockError, LockNotOwnedError
from contend.impl.locks.lease import COMPARE_AND_DELETE

FACTORIES = [
    pytest.param(async_token.factory, id="async_token"),
    pytest.param(async_early_clear.factory, id="async_early_clear"),
]
BAD_TTLS = [0, -1, None, 1.5, True, "1000"]


def run(main: Callable[..., Awaitable[Any]], *args: Any) -> Any:
    """Run one test's coroutine on a fresh event loop."""
    return asyncio.run(main(*args))  # type: ignore[arg-type]


@pytest.fixture
def url(contend_target):
    return contend_target.url


@pytest.fixture
def key(ns):
    return ns.key("lock")


@pytest.mark.parametrize("factory", FACTORIES)
def test_one_holder_at_a_time_and_release_frees_it(factory, url, key, client):
    async def main():
        async with redis.asyncio.Redis.from_url(url) as aclient:
            a, b = factory(aclient, key, 1_000), factory(aclient, key, 1_000)
            assert await a.acquire(blocking=False) is True
            assert await b.acquire(blocking=False) is False
            assert client.get(key) == a.token.encode()
            assert await b.locked()
            await a.release()
            assert client.get(key) is None
            assert await b.acquire(blocking=False) is True
            with pytest.raises(LockError, match="already holds"):
                await b.acquire(blocking=False)
            await b.release()
            with pytest.raises(LockNotOwnedError, match="does not hold"):
                await b.release()

    run(main)


@pytest.mark.parametrize("factory", FACTORIES)
def test_release_after_expiry_raises_and_spares_the_successor(factory, url, key, client):
    async def main():
        async with redis.asyncio.Redis.from_url(url) as aclient:
            a, b = factory(aclient, key, 100), factory(aclient, key, 1_000)
            assert await a.acquire(blocking=False)
            await asyncio.sleep(0.15)
            assert await b.acquire(blocking=False)
            with pytest.raises(LockNotOwnedError, match="expired after 100 ms or was taken"):
                await a.release()
            assert a.token is None
            assert client.get(key) == b.token.encode()
            await b.release()

    run(main)


def test_extend_keeps_the_lease_and_fails_once_lost(url, key, client):
    async def main():
        async with redis.asyncio.Redis.from_url(url) as aclient:
            lock = async_token.factory(aclient, key, 150)
            assert await lock.acquire()
            assert await lock.extend(5_000) is True
            assert client.pttl(key) > 1_000
            with pytest.raises(ValueError):
                await lock.extend(0)
            client.delete(key)  # as if it had expired
            with pytest.raises(LockNotOwnedError):
                await lock.extend()
            with pytest.raises(LockNotOwnedError):
                await lock.release()

    run(main)


def test_blocking_acquire_waits_for_the_holder_and_gives_up_on_loop_time(url, key):
    async def main():
        async with redis.asyncio.Redis.from_url(url) as aclient:
            holder, waiter = (
                async_token.factory(aclient, key, 5_000),
                async_token.factory(aclient, key, 1_000),
            )
            assert await holder.acquire()
            loop = asyncio.get_running_loop()
            start = loop.time()
            assert await waiter.acquire(timeout=0.2) is False
            assert 0.19 < loop.time() - start < 0.6

            async def release_soon():
                await asyncio.sleep(0.05)
                await holder.release()

            got, _ = await asyncio.gather(waiter.acquire(timeout=2), release_soon())
            assert got is True
            await waiter.release()

    run(main)


def test_async_with_acquires_and_releases(url, key, client):
    async def main():
        async with redis.asyncio.Redis.from_url(url) as aclient:
            async with async_token.factory(aclient, key, 1_000) as lock:
                assert client.get(key) == lock.token.encode()
            assert client.get(key) is None

    run(main)


@pytest.mark.parametrize("factory", FACTORIES)
@pytest.mark.parametrize("bad", BAD_TTLS, ids=repr)
def test_a_bad_ttl_is_a_value_error_before_anything_is_written(factory, bad, url, key, ns):
    async def main():
        async with redis.asyncio.Redis.from_url(url) as aclient:
            with pytest.raises(ValueError):
                factory(aclient, key, bad)
            with pytest.raises(ValueError):
                factory(aclient, "", 1_000)

    run(main)
    assert ns.count() == 0


# --- cancellation during release (redis-py #3847) ---------------------------------------------


async def cancel_release_waiting_for_a_connection(lock: Any, pool: Any) -> None:
    """Cancel `lock.release()` while it waits for the pool's only connection (held here), so
    its compare-and-delete has not been sent; then give the connection back."""
    conn = await pool.get_connection()
    task = asyncio.create_task(lock.release())
    for _ in range(5):  # however many turns the loop takes, the release cannot get past the pool
        await asyncio.sleep(0)
    assert not task.done()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await pool.release(conn)


def one_connection_client(url: str) -> redis.asyncio.Redis:
    pool = redis.asyncio.BlockingConnectionPool.from_url(url, max_connections=1, timeout=None)
    return redis.asyncio.Redis.from_pool(pool)


def test_correct_release_cancelled_before_the_delete_is_sent_stays_releasable(url, key, client):
    async def main():
        async with one_connection_client(url) as aclient:
            lock = async_token.factory(aclient, key, 10_000)
            assert await lock.acquire(blocking=False)
            await cancel_release_waiting_for_a_connection(lock, aclient.connection_pool)
            # The delete has not run yet, and the object still knows it holds the lease.
            assert client.get(key) is not None
            assert lock.token is not None
            await lock.release()  # joins the shielded delete already in flight
            assert client.get(key) is None
            assert lock.token is None
            assert await async_token.factory(aclient, key, 1_000).acquire(blocking=False)

    run(main)


def test_correct_release_cancelled_finishes_the_delete_on_its_own(url, key, client):
    async def main():
        async with one_connection_client(url) as aclient:
            lock = async_token.factory(aclient, key, 10_000)
            assert await lock.acquire(blocking=False)
            await cancel_release_waiting_for_a_connection(lock, aclient.connection_pool)
            loop = asyncio.get_running_loop()
            deadline = loop.time() + 2
            while lock.token is not None and loop.time() < deadline:
                await asyncio.sleep(0.001)
            assert lock.token is None
            assert client.get(key) is None

    run(main)


def test_early_clear_release_cancelled_before_the_delete_is_sent_leaves_the_key_held(url, key, client):
    """#3847: the object forgot its token, the key stays, and nobody can release it before the TTL."""

    async def main():
        async with one_connection_client(url) as aclient:
            lock = async_early_clear.factory(aclient, key, 10_000)
            assert await lock.acquire(blocking=False)
            await cancel_release_waiting_for_a_connection(lock, aclient.connection_pool)
            assert lock.token is None
            assert client.get(key) is not None
            with pytest.raises(LockNotOwnedError, match="does not hold"):
                await lock.release()
            assert await async_early_clear.factory(aclient, key, 1_000).acquire(blocking=False) is False
            assert await lock.acquire(blocking=False) is False
            assert client.pttl(key) > 5_000  # freed only when its TTL runs out

    run(main)


def watched_client(url: str, sent: asyncio.Event) -> redis.asyncio.Redis:
    """A client whose connections set `sent` once they have written an EVALSHA."""

    class Watching(redis.asyncio.Connection):
        async def send_command(self, *args: Any, **kwargs: Any) -> None:
            await super().send_command(*args, **kwargs)
            if args and str(args[0]).upper() == "EVALSHA":
                sent.set()

    pool = redis.asyncio.ConnectionPool.from_url(url, connection_class=Watching)
    return redis.asyncio.Redis.from_pool(pool)


async def cancel_release_after_the_delete_is_sent(lock: Any, sent: asyncio.Event) -> None:
    task = asyncio.create_task(lock.release())
    await sent.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


def test_correct_release_cancelled_after_the_delete_is_sent_is_released_or_releasable(url, key, client):
    async def main():
        sent = asyncio.Event()
        async with watched_client(url, sent) as aclient:
            lock = async_token.factory(aclient, key, 10_000)
            assert await lock.acquire(blocking=False)
            client.script_load(COMPARE_AND_DELETE)  # so the first EVALSHA is the delete, not a NOSCRIPT
            await cancel_release_after_the_delete_is_sent(lock, sent)
            # Never "forgot the token while the key is still there".
            assert lock.token is not None or client.get(key) is None
            if lock.token is not None:
                await lock.release()
            assert lock.token is None
            assert client.get(key) is None

    run(main)
