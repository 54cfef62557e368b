"""KNOWN-BAD: the seed's register_naive for redis.asyncio. Check, then act, at separate awaits.

HGET the name; if absent, INCR the counter, then HSETNX the forward and the
inverse table: four round trips, each an await at which another task runs.
Two tasks registering one name both see it absent, both INCR, and the one
whose HSETNX comes second raises "Failed to register", leaving a gap in the
ids (the async analogue of `impl.registry.naive`). No threads are needed: one
event loop interleaves the tasks at every await.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio

from contend.impl.registry.async_lua import AsyncRegistry
from contend.impl.registry.base import RegistrationError, check_name


class AsyncCheckThenSetRegistry(AsyncRegistry):
    strategy = "async_check_then_set"

    async def register(self, name: str) -> int:
        name = check_name(name)
        index: Any = await self.client.hget(self.keys.ids, name)
        if index is None:
            index = await self.client.incr(self.keys.counter)
            if not await self.client.hsetnx(self.keys.ids, name, index):
                raise RegistrationError(
                    f"Failed to register: key={self.keys.ids}, name={name}, value={index}"
                )
            if not await self.client.hsetnx(self.keys.names, index, name):
                raise RegistrationError(f"Failed to register: key={self.keys.names}, id={index}, name={name}")
        return int(index)


def factory(client: redis.asyncio.Redis, namespace: str) -> AsyncCheckThenSetRegistry:
    """The registry-protocol factory (async)."""
    return AsyncCheckThenSetRegistry(client, namespace)
