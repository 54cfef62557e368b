"""Bad input, as the protocol promises and nothing stricter, for sync and async code alike.

A lock refuses ttl_ms <= 0 and an empty key; a registry refuses an empty name (in register and,
if it has one, register_many). Any exception counts, raised by the factory or by the method,
before anything is written. One check per family, run with a redis-py client, or for
`redis.asyncio` code with a redis.asyncio client on a loop of its own and the methods awaited.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any

from contend.check.framework import Check, CheckContext, expect_rejected
from contend.impl.catalog import BAD_INPUT

#: What the protocol promises is refused: a TTL that would delete the key at once, and an empty key.
BAD_TTLS: list[tuple[str, Any]] = [("ttl 0", 0), ("ttl -1", -1)]


def with_client(ctx: CheckContext, use: Callable[[Any], Any]) -> Any:
    """`use(client)` with a client of the implementation's kind; for async code, on a fresh loop
    with a redis.asyncio client of its own, what it returns awaited."""
    if not getattr(ctx.subject, "asynchronous", False):
        return use(ctx.client())

    async def main() -> Any:
        client = ctx.target.async_client()
        try:
            result = use(client)
            return await result if inspect.isawaitable(result) else result
        finally:
            await client.aclose()

    return asyncio.run(main())


def lock_bad_input_check(ctx: CheckContext) -> str:
    """ttl_ms <= 0 and an empty key raise (any exception) before anything is written."""
    key = ctx.namespace.key("bad")
    cases: list[tuple[str, str, Any]] = [(what, key, ttl) for what, ttl in BAD_TTLS]
    cases.append(("empty key", "", 1000))
    raised = set()
    for what, name, ttl in cases:

        def attempt(client: Any, name: str = name, ttl: Any = ttl) -> Any:
            return ctx.factory(client, name, ttl).acquire(blocking=False)

        raised.add(expect_rejected(ctx, what, with_client, ctx, attempt))
    return f"{len(cases)} bad arguments refused ({', '.join(sorted(raised))}), nothing written"


def registry_bad_input_check(ctx: CheckContext) -> str:
    """An empty name raises (any exception) before anything is written, in register and, if the
    registry has it, register_many."""
    prefix = ctx.namespace.prefix
    calls: list[tuple[str, Callable[[Any], Any]]] = [
        ("register(an empty name)", lambda client: ctx.factory(client, prefix).register(""))
    ]
    if with_client(ctx, lambda client: callable(getattr(ctx.factory(client, prefix), "register_many", None))):
        calls.append(
            (
                "register_many(an empty name among good ones)",
                lambda client: ctx.factory(client, prefix).register_many(["fine", "", "ok"]),
            )
        )
    raised = {expect_rejected(ctx, what, with_client, ctx, attempt) for what, attempt in calls}
    return f"{len(calls)} bad input(s) refused ({', '.join(sorted(raised))}), nothing written"


LOCK_BAD_INPUT = Check(
    "bad-input", "ttl_ms <= 0 and an empty key refused, nothing written", lock_bad_input_check, BAD_INPUT
)
REGISTRY_BAD_INPUT = Check(
    "bad-input", "an empty name refused, nothing written", registry_bad_input_check, BAD_INPUT
)
