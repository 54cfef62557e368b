"""KNOWN-BAD: the async token lease whose release forgets its token first (redis-py issue #3847).

Identical to `impl.locks.async_token` except `release()`: it clears the token,
then awaits the compare-and-delete without shielding it, as redis.asyncio's
Lock did before PR #3900. A task cancelled at that await before the command
reaches the server (waiting for a pooled connection, connecting, in a retry's
backoff) leaves the key in Redis and an object that believes it holds
nothing: `release()` now raises LockNotOwnedError, `acquire()` on any object
fails, and the key stays until its TTL runs out. The lease is only freed by
expiry, as if its live holder had crashed; without a TTL it would never be.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio

from contend.impl.locks.async_token import AsyncTokenLock
from contend.impl.locks.errors import LockNotOwnedError


class AsyncEarlyClearLock(AsyncTokenLock):
    """`AsyncTokenLock` with the #3847 release: token cleared before the delete, no shield."""

    async def release(self) -> None:
        """Give the lease back; a cancellation before the delete is sent loses the lease's token."""
        token = self._held("release")
        self.token = None
        if not await self._compare_and_delete(keys=[self.key], args=[token]):
            raise LockNotOwnedError(
                f"lock {self.key!r}: release() found the lease gone or held by another client "
                f"(it expired after {self.ttl_ms} ms or was taken)"
            )


def factory(client: redis.asyncio.Redis, key: str, ttl_ms: int, **kwargs: Any) -> AsyncEarlyClearLock:
    """The lock-protocol factory (async)."""
    return AsyncEarlyClearLock(client, key, ttl_ms, **kwargs)
