"""The token lease for redis.asyncio: SET NX PX a random token, compare-and-delete to release.

The async twin of `impl.locks.token`, with one thing the sync lock never has
to think about: a task can be cancelled at any await. Release is where that
hurts (redis-py issue #3847, fixed in redis-py by PR #3900): a release that
forgets its token before the compare-and-delete has run, and is cancelled
before the command reaches the server, leaves the key in Redis and an object
that believes it holds nothing, so nobody can release it until its TTL runs
out (`impl.locks.async_early_clear` keeps that mistake on purpose).

What this lock does instead: `release()` runs the compare-and-delete in a
task of its own and awaits it through `asyncio.shield`. Cancelling the caller
cancels only the wait, never the delete; the token is cleared by that task,
and only once the server has answered (deleted, or found the lease no longer
ours). Until then the object still holds the token, and calling `release()`
again joins the same task instead of sending a second delete. A connection
error keeps the token too: the outcome is unknown, and a later release either
deletes the key or finds it gone.

Redis-py's own resend after a connection error is left alone (redis-py 8.1:
`redis.asyncio.Redis(...)` retries 10 times with jittered backoff, `from_url`
not at all): a resent SET NX can only make `acquire()` report False
for a lease it did take (the orphan expires within one TTL), and a resent
compare-and-delete can only make `release()` report a lease it did free as
lost. Neither lets two holders in. A cancelled `acquire()` is like a holder
that crashed: a SET that reached the server holds the key for one TTL.

Blocking acquire polls with `asyncio.sleep` against the loop's clock
(`loop.time()`), never `time.sleep` or `time.monotonic`, so a virtual-time loop
controls it.
"""

from __future__ import annotations

import asyncio
import random
import secrets
from types import TracebackType
from typing import Any

import redis.asyncio

from contend.impl.locks.errors import LockError, LockNotOwnedError, LockTimeoutError
from contend.impl.locks.lease import COMPARE_AND_DELETE, COMPARE_AND_PEXPIRE
from contend.impl.locks.validation import check_key, check_timeout, check_ttl_ms


class AsyncTokenLock:
    """A lease on `key` for `ttl_ms` milliseconds. One object per holder task."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        key: str,
        ttl_ms: int,
        *,
        retry_interval: float = 0.005,
        max_retry_interval: float = 0.05,
    ) -> None:
        self.client = client
        self.key = check_key(key)
        self.ttl_ms = check_ttl_ms(ttl_ms)
        self.retry_interval = retry_interval
        self.max_retry_interval = max_retry_interval
        self.token: str | None = None
        self._releasing: asyncio.Task[None] | None = None
        # COMPARE_AND_DELETE: KEYS[1] the lock key, ARGV[1] the token; 1 if deleted, else 0.
        self._compare_and_delete = client.register_script(COMPARE_AND_DELETE)
        # COMPARE_AND_PEXPIRE: KEYS[1] the lock key, ARGV[1] the token, ARGV[2] the TTL in ms;
        # 1 if reset, else 0.
        self._compare_and_pexpire = client.register_script(COMPARE_AND_PEXPIRE)

    async def try_acquire(self) -> bool:
        """One attempt, one round trip: SET key token NX PX ttl."""
        token = secrets.token_hex(16)
        if await self.client.set(self.key, token, nx=True, px=self.ttl_ms):
            self.token = token
            return True
        return False

    async def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lease; with `blocking`, retry until `timeout` seconds of loop time (None: no limit)."""
        if self.token is not None:
            raise LockError(
                f"lock {self.key!r}: acquire() while this object already holds it; "
                "release() first or use a second object"
            )
        limit = check_timeout(timeout)
        loop = asyncio.get_running_loop()
        deadline = None if limit is None else loop.time() + limit
        pause = self.retry_interval
        while True:
            if await self.try_acquire():
                return True
            if not blocking:
                return False
            now = loop.time()
            if deadline is not None and now >= deadline:
                return False
            wait = random.uniform(pause / 2, pause)
            if deadline is not None:
                wait = min(wait, deadline - now)
            await asyncio.sleep(wait)
            pause = min(pause * 2, self.max_retry_interval)

    async def release(self) -> None:
        """Give the lease back; LockNotOwnedError if it is no longer ours.

        Cancelling the caller does not cancel the delete (see the module docstring); a second call
        while the first delete is still in flight waits for that one.
        """
        task = self._releasing
        if task is None:
            token = self._held("release")
            task = asyncio.get_running_loop().create_task(self._compare_and_delete_once(token))
            task.add_done_callback(_retrieve)
            self._releasing = task
        await asyncio.shield(task)

    async def _compare_and_delete_once(self, token: str) -> None:
        """The shielded part of release: clear the token only once the server has answered."""
        try:
            deleted = await self._compare_and_delete(keys=[self.key], args=[token])
        finally:
            self._releasing = None
        if self.token == token:
            self.token = None
        if not deleted:
            raise LockNotOwnedError(
                f"lock {self.key!r}: release() found the lease gone or held by another client "
                f"(it expired after {self.ttl_ms} ms or was taken)"
            )

    async def extend(self, ttl_ms: int | None = None) -> bool:
        """Reset the lease to `ttl_ms` from now (default: the TTL); LockNotOwnedError if lost."""
        ttl = self.ttl_ms if ttl_ms is None else check_ttl_ms(ttl_ms)
        token = self._held("extend")
        if self._releasing is not None:
            raise LockError(f"lock {self.key!r}: extend() while a release() of this lease is in flight")
        if not await self._compare_and_pexpire(keys=[self.key], args=[token, ttl]):
            if self.token == token:
                self.token = None
            raise LockNotOwnedError(
                f"lock {self.key!r}: extend() found the lease gone or held by another client"
            )
        return True

    async def locked(self) -> bool:
        """Does anyone hold the key right now?"""
        return bool(await self.client.exists(self.key))

    def _held(self, action: str) -> str:
        if self.token is None:
            raise LockNotOwnedError(f"lock {self.key!r}: {action}() on a lock this object does not hold")
        return self.token

    async def __aenter__(self) -> AsyncTokenLock:
        if not await self.acquire():
            raise LockTimeoutError(f"lock {self.key!r}: could not acquire")
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.release()

    def __repr__(self) -> str:
        state = "releasing" if self._releasing else "held" if self.token else "not held"
        return f"<{type(self).__name__} {self.key!r} ttl={self.ttl_ms}ms {state}>"


def _retrieve(task: asyncio.Task[None]) -> None:
    """Mark the outcome as seen: a caller cancelled mid-release may never await the task again."""
    if not task.cancelled():
        task.exception()


def factory(client: redis.asyncio.Redis, key: str, ttl_ms: int, **kwargs: Any) -> AsyncTokenLock:
    """The lock-protocol factory (async)."""
    return AsyncTokenLock(client, key, ttl_ms, **kwargs)
