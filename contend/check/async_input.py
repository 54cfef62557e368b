"""Bad input for async implementations: the same promises as the sync battery's bad-input
check (contend.check.locks, contend.check.registry), with the methods awaited.

A lock refuses ttl_ms <= 0 and an empty key, a registry an empty name (in register and,
if it has one, register_many): any exception, from the factory or from the awaited method,
raised before anything is written.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio

from contend.check.framework import Check, CheckContext, expect_rejected
from contend.check.locks import BAD_TTLS
from contend.impl.catalog import BAD_INPUT


def _run(ctx: CheckContext, attempt: Callable[[redis.asyncio.Redis], Awaitable[Any]]) -> None:
    """Run `attempt(client)` on a fresh loop with a redis.asyncio client of its own."""

    async def main() -> None:
        client = ctx.target.async_client()
        try:
            await attempt(client)
        finally:
            await client.aclose()

    asyncio.run(main())


def async_lock_bad_input_check(ctx: CheckContext) -> str:
    """ttl_ms <= 0 and an empty key raise (any exception) before anything is written."""
    key = ctx.namespace.key("bad")
    cases: list[tuple[str, str, Any]] = [(what, key, ttl) for what, ttl in BAD_TTLS]
    cases.append(("empty key", "", 1000))
    raised = set()
    for what, name, ttl in cases:

        async def attempt(client: redis.asyncio.Redis, name: str = name, ttl: Any = ttl) -> None:
            await ctx.factory(client, name, ttl).acquire(blocking=False)

        raised.add(expect_rejected(ctx, what, _run, ctx, attempt))
    return f"{len(cases)} bad arguments refused ({', '.join(sorted(raised))}), nothing written"


def async_registry_bad_input_check(ctx: CheckContext) -> str:
    """An empty name raises (any exception) before anything is written, in register and, if the
    registry has it, register_many."""
    prefix = ctx.namespace.prefix

    async def register(client: redis.asyncio.Redis) -> None:
        await ctx.factory(client, prefix).register("")

    async def register_many(client: redis.asyncio.Redis) -> None:
        await ctx.factory(client, prefix).register_many(["fine", "", "ok"])

    calls: list[tuple[str, Callable[[redis.asyncio.Redis], Awaitable[Any]]]] = [
        ("register(an empty name)", register)
    ]
    found: dict[str, bool] = {}

    async def has_many(client: redis.asyncio.Redis) -> None:
        found["many"] = callable(getattr(ctx.factory(client, prefix), "register_many", None))

    _run(ctx, has_many)
    if found.get("many"):
        calls.append(("register_many(an empty name among good ones)", register_many))
    raised = {expect_rejected(ctx, what, _run, ctx, attempt) for what, attempt in calls}
    return f"{len(calls)} bad input(s) refused ({', '.join(sorted(raised))}), nothing written"


ASYNC_LOCK_BAD_INPUT = Check(
    "bad-input",
    "ttl_ms <= 0 and an empty key refused, nothing written",
    async_lock_bad_input_check,
    BAD_INPUT,
)
ASYNC_REGISTRY_BAD_INPUT = Check(
    "bad-input", "an empty name refused, nothing written", async_registry_bad_input_check, BAD_INPUT
)
