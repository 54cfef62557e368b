"""Bursts for async implementations: tasks on one event loop, each with a pre-connected
redis.asyncio client, released together by an `asyncio.Event` (asyncio.Barrier's job, on
Python 3.10 too) and run by `asyncio.gather`, in real time.

The loop runs every ready task before it reads a socket, so all the clients' first
commands leave before any reply comes back: a check-then-act between two awaits is hit
every round.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

import redis.asyncio

from contend.check.faults import key_state
from contend.check.framework import Check, CheckContext, CheckFailed
from contend.impl.catalog import MUTUAL_EXCLUSION, NO_SPURIOUS_ERRORS, PROGRESS, STABLE_IDS
from contend.subject.protocols import granted

#: The lease of the burst's locks (ms): no lease runs out during a round.
LONG_TTL = 10_000


async def _together(
    clients: list[redis.asyncio.Redis], make: Callable[[redis.asyncio.Redis], Awaitable[Any]]
) -> list[Any]:
    """Run `make(client)` for every client at once; each result, or the exception it raised."""
    await asyncio.gather(*(c.ping() for c in clients))  # connected before the start
    go = asyncio.Event()

    async def one(client: redis.asyncio.Redis) -> Any:
        await go.wait()
        return await make(client)

    tasks = [asyncio.ensure_future(one(c)) for c in clients]
    await asyncio.sleep(0)  # every task waits at the start line
    go.set()
    return list(await asyncio.gather(*tasks, return_exceptions=True))


def _errors(outcomes: list[Any]) -> str:
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    if not errors:
        return ""
    first = errors[0]
    return f"{len(errors)} of {len(outcomes)} raised {type(first).__name__}: {first}"


def lock_burst_check(ctx: CheckContext) -> str:
    """Tasks try one lock at the same instant, round after round: at most one wins; when none
    does, one trying alone must (a try-lock may lose to contention, not to a stuck lock)."""
    k, rounds = ctx.options.burst_clients, ctx.options.burst_rounds

    async def run() -> int:
        clients = [ctx.target.async_client() for _ in range(k)]
        split = 0
        try:
            for r in range(rounds):
                key = ctx.namespace.key("async-burst", r)
                locks: dict[int, Any] = {}

                async def attempt(
                    client: redis.asyncio.Redis, locks: dict[int, Any] = locks, key: str = key
                ) -> bool:
                    lock = locks[id(client)] = ctx.factory(client, key, LONG_TTL)
                    return granted(await lock.acquire(blocking=False))

                outcomes = await _together(clients, attempt)
                winners = [clients[i] for i, o in enumerate(outcomes) if o is True]
                what = f"round {r + 1}: {k} tasks at once on a lock nobody held"
                if len(winners) > 1:
                    raise CheckFailed(f"{what}: {len(winners)} acquired it", prop=MUTUAL_EXCLUSION)
                if winners:
                    with contextlib.suppress(Exception):
                        await locks[id(winners[0])].release()
                    continue
                alone = ctx.factory(clients[0], key, LONG_TTL)
                if not granted(await alone.acquire(blocking=False)):
                    errors = _errors(outcomes)
                    raise CheckFailed(
                        f"{what}: none acquired it, nor one task alone afterwards ({key_state(ctx.namespace.client, key)})"
                        + (f"; {errors}" if errors else ""),
                        prop=PROGRESS,
                    )
                with contextlib.suppress(Exception):
                    await alone.release()
                split += 1
        finally:
            for c in clients:
                await c.aclose()
        return split

    split = asyncio.run(run())
    summary = f"{rounds} rounds of {k} tasks at once (asyncio.gather, pre-connected clients): at most one winner each"
    return summary + (f"; in {split} round(s) none won, and a task alone then did" if split else "")


def registry_burst_check(ctx: CheckContext) -> str:
    """Tasks register one fresh name at the same instant, round after round: one id each, no errors."""
    k, rounds = ctx.options.burst_clients, ctx.options.burst_rounds

    async def run() -> None:
        clients = [ctx.target.async_client() for _ in range(k)]
        regs = {id(c): ctx.factory(c, ctx.namespace.prefix) for c in clients}
        try:
            for r in range(rounds):
                name = f"hot-{r}"

                async def register(client: redis.asyncio.Redis, name: str = name) -> Any:
                    return await regs[id(client)].register(name)

                outcomes = await _together(clients, register)
                what = f"round {r + 1}: {k} tasks registering {name!r} at once"
                if failed := _errors(outcomes):
                    raise CheckFailed(f"{what}: {failed}", prop=NO_SPURIOUS_ERRORS)
                if len(set(outcomes)) != 1:
                    raise CheckFailed(f"{what} got ids {sorted(set(outcomes))}", prop=STABLE_IDS)
        finally:
            for c in clients:
                await c.aclose()

    asyncio.run(run())
    return f"{rounds} rounds × {k} tasks on one name (asyncio.gather, pre-connected clients): one id each"


ASYNC_LOCK_BURST = Check(
    "burst",
    "tasks on pre-connected clients released together (asyncio.gather): at most one winner",
    lock_burst_check,
    MUTUAL_EXCLUSION,
    needs=MUTUAL_EXCLUSION,
)
ASYNC_REGISTRY_BURST = Check(
    "burst-one-name",
    "tasks on pre-connected clients register one name together (asyncio.gather): one id",
    registry_burst_check,
    STABLE_IDS,
)
