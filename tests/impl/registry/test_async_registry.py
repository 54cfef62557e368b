"""The async registries: async_lua (correct) and async_check_then_set (known-bad).

Sequential behaviour matches the sync registries; the same keys and scripts
make async_lua interoperate with the sync lua registry. Concurrency is shown
with tasks on one event loop: the check-then-set registry splits one
registration over four awaits, and two tasks registering one name through
asyncio.gather both see it missing.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis.asyncio

from contend.impl.catalog import async_by_name
from contend.impl.registry import LuaRegistry, RegistrationError, RegistryKeys
from contend.impl.registry.async_lua import AsyncLuaRegistry

ASYNC_REGISTRIES = [
    pytest.param(async_by_name("async_lua").factory, id="async_lua"),
    pytest.param(async_by_name("async_check_then_set").factory, id="async_check_then_set"),
]
BAD_NAMES = ["", b"", 42, None, ["a"], b"\xff\xfe"]


@pytest.fixture
def url(contend_target):
    return contend_target.url


async def warm(client: redis.asyncio.Redis, connections: int) -> None:
    """Open `connections` pooled connections now, so no task connects (and suspends) mid-race."""
    pool = client.connection_pool
    held = [await pool.get_connection() for _ in range(connections)]
    for conn in held:
        await pool.release(conn)


@pytest.mark.parametrize("factory", ASYNC_REGISTRIES)
def test_sequential_register_lookup_reverse_count(factory, url, ns):
    async def main():
        async with redis.asyncio.Redis.from_url(url) as aclient:
            reg = factory(aclient, ns.prefix)
            assert await reg.register("b") == 1
            assert await reg.register("b") == 1
            assert await reg.register_many(["a", "b", "c", "a"]) == [2, 1, 3, 2]
            assert await reg.register_many([]) == []
            assert await reg.count() == 3
            assert [await reg.reverse(i) for i in (1, 2, 3, 4)] == ["b", "a", "c", None]
            assert await reg.lookup("c") == 3
            assert await reg.lookup("missing") is None
            assert await reg.register("名前".encode()) == await reg.register("名前") == 4

    asyncio.run(main())


@pytest.mark.parametrize("factory", ASYNC_REGISTRIES)
@pytest.mark.parametrize("bad", BAD_NAMES, ids=repr)
def test_bad_names_raise_value_error_and_write_nothing(factory, bad, url, ns):
    async def main():
        async with redis.asyncio.Redis.from_url(url) as aclient:
            reg = factory(aclient, ns.prefix)
            with pytest.raises(ValueError):
                await reg.register(bad)
            with pytest.raises(ValueError):
                await reg.register_many(["fine", bad])
            with pytest.raises(ValueError):
                await reg.register_many("abc")

    asyncio.run(main())
    assert ns.count() == 0


def test_async_lua_shares_keys_and_scripts_with_the_sync_lua_registry(url, client, ns):
    sync = LuaRegistry(client, ns.prefix)
    assert sync.register("first") == 1

    async def main():
        async with redis.asyncio.Redis.from_url(url) as aclient:
            reg = AsyncLuaRegistry(aclient, ns.prefix)
            assert reg.keys == sync.keys
            assert await reg.register("first") == 1
            assert await reg.register("second") == 2

    asyncio.run(main())
    assert sync.lookup("second") == 2
    assert sync.reverse(2) == "second"


def register_together(factory: Any, url: str, namespace: str, name: str, tasks: int) -> list[Any]:
    """`tasks` tasks register `name` at once on one loop, each with a warm connection of its own."""

    async def main() -> list[Any]:
        async with redis.asyncio.Redis.from_url(url) as aclient:
            await warm(aclient, tasks)
            registries = [factory(aclient, namespace) for _ in range(tasks)]
            return await asyncio.gather(*(r.register(name) for r in registries), return_exceptions=True)

    return asyncio.run(main())


def test_async_lua_gives_concurrent_registrations_of_one_name_one_id(url, client, ns):
    factory = async_by_name("async_lua").factory
    for round_ in range(5):
        name = f"name-{round_}"
        assert register_together(factory, url, ns.prefix, name, 16) == [round_ + 1] * 16
    reg = LuaRegistry(client, ns.prefix)
    assert reg.count() == 5
    assert int(client.get(reg.keys.counter)) == 5


def test_check_then_set_loses_two_concurrent_registrations_of_one_name(url, client, ns):
    """Two tasks, one name, asyncio.gather: both HGETs are written before either reply is read (the
    loop runs every ready task before it polls the sockets, and the pool's connections are already
    open, so neither task waits on a connect), so both see the name missing, both INCR, and the second HSETNX fails: "Failed to register" and a gap.
    Not a scheduled interleaving: it follows from how the event loop runs ready tasks, and it is
    asserted on every one of several rounds."""
    factory = async_by_name("async_check_then_set").factory
    keys = RegistryKeys(ns.prefix)
    for round_ in range(5):
        name = f"name-{round_}"
        results = register_together(factory, url, ns.prefix, name, 2)
        ids = [r for r in results if isinstance(r, int)]
        errors = [r for r in results if isinstance(r, RegistrationError)]
        assert len(ids) == 1 and len(errors) == 1, results
        assert "Failed to register" in str(errors[0])
        # Each round hands out two ids for one name: the counter runs ahead of the table (a gap).
        assert int(client.get(keys.counter)) == 2 * (round_ + 1)
        assert client.hlen(keys.ids) == round_ + 1
