"""The name→ID registry for redis.asyncio: the async twin of `impl.registry.lua`.

Same keys (`impl.registry.keys`, one hash tag) and the same Lua scripts, run
through redis-py's `AsyncScript` (`client.register_script`), which sends
EVALSHA and loads the script on NOSCRIPT. A registration is one atomic round
trip, so tasks interleaving at any await cannot split it; a cancelled
`register` either ran on the server or did not, and both are a state the
registry allows (resending the script for the same name returns the same id).
`AsyncRegistry` holds the reads both async registries share.
"""

from __future__ import annotations

from collections.abc import Iterable

import redis.asyncio

from contend.impl.registry.base import check_id, check_name, check_names, text
from contend.impl.registry.keys import RegistryKeys
from contend.impl.registry.lua import LuaRegistry


class AsyncRegistry:
    """Base of the async registries: the single-database layout and its reads."""

    #: Short name used by the catalog and the CLI.
    strategy = "abstract"

    def __init__(self, client: redis.asyncio.Redis, namespace: str, *, registry: str = "registry") -> None:
        self.client = client
        self.keys = RegistryKeys(namespace, registry)

    async def register(self, name: str) -> int:
        """The id of `name`, handing out the next id if it has none yet."""
        raise NotImplementedError

    async def register_many(self, names: Iterable[str]) -> list[int]:
        """Ids for several names, in order; the default registers one by one."""
        return [await self.register(n) for n in check_names(names)]

    async def lookup(self, name: str) -> int | None:
        """The id of `name`, or None when it was never registered."""
        found = await self.client.hget(self.keys.ids, check_name(name))
        return None if found is None else int(found)

    async def reverse(self, ident: int) -> str | None:
        """The name registered under `ident`, or None."""
        found = await self.client.hget(self.keys.names, check_id(ident))
        return None if found is None else text(found)

    async def count(self) -> int:
        """How many names are registered."""
        return int(await self.client.hlen(self.keys.ids))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.keys.ids!r}>"


class AsyncLuaRegistry(AsyncRegistry):
    """One server-side script per registration (and per batch)."""

    strategy = "async_lua"

    def __init__(self, client: redis.asyncio.Redis, namespace: str, *, registry: str = "registry") -> None:
        super().__init__(client, namespace, registry=registry)
        self._keys = [self.keys.counter, self.keys.ids, self.keys.names]
        # KEYS[1]: the id counter, KEYS[2]: ids (name -> id), KEYS[3]: names (id -> name).
        # ARGV[1]: the name. Returns the name's id, handed out now if it had none.
        self._register = client.register_script(LuaRegistry.REGISTER)
        # KEYS: as above. ARGV: the names. Returns their ids in order, new ones handed out in that order.
        self._register_many = client.register_script(LuaRegistry.REGISTER_MANY)

    async def register(self, name: str) -> int:
        return int(await self._register(keys=self._keys, args=[check_name(name)]))

    async def register_many(self, names: Iterable[str]) -> list[int]:
        wanted = check_names(names)
        if not wanted:
            return []
        return [int(i) for i in await self._register_many(keys=self._keys, args=wanted)]


def factory(client: redis.asyncio.Redis, namespace: str) -> AsyncLuaRegistry:
    """The registry-protocol factory (async)."""
    return AsyncLuaRegistry(client, namespace)
