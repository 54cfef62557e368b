"""How long an adapter's acquire of a held lock takes: one try, and a blocking acquire with a
timeout; for a rate limiter, how long a hit on a full window takes to be refused. Run here, or as
a script inside a library's own environment:

    python tests/adapters/timing_probe.py MODULE:FACTORY REDIS_URL KEY TIMEOUT

prints {"tried": bool, "try_s": float, "waited": bool, "wait_s": float} as JSON (with TIMEOUT
`hit`: {"admitted": bool, "refused": bool, "refused_s": float}).
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import sys
import time
from typing import Any

import redis
import redis.asyncio

#: A lease long enough that the holder keeps the lock through the waiter's attempts.
TTL_MS = 10_000


def measure(adapter: str, url: str, key: str, timeout: float) -> dict[str, Any]:
    """Holder takes the lock; a waiter tries once, then blocks for `timeout`: what each returned
    and how long it took (the real clock)."""
    module, name = adapter.split(":")
    factory = getattr(importlib.import_module(module), name)
    probe = factory(redis.Redis.from_url(url), key + ":shape", TTL_MS)
    if inspect.iscoroutinefunction(probe.acquire):
        return asyncio.run(_measure_async(factory, url, key, timeout))
    holder = factory(redis.Redis.from_url(url), key, TTL_MS)
    waiter = factory(redis.Redis.from_url(url), key, TTL_MS)
    assert holder.acquire(blocking=False), "a free lock was not acquired"
    try:
        started = time.perf_counter()
        tried = bool(waiter.acquire(blocking=False))
        try_s = time.perf_counter() - started
        started = time.perf_counter()
        waited = bool(waiter.acquire(blocking=True, timeout=timeout))
        wait_s = time.perf_counter() - started
    finally:
        _quietly(holder.release)
    return {"tried": tried, "try_s": try_s, "waited": waited, "wait_s": wait_s}


async def _measure_async(factory: Any, url: str, key: str, timeout: float) -> dict[str, Any]:
    holder = factory(redis.asyncio.Redis.from_url(url), key, TTL_MS)
    waiter = factory(redis.asyncio.Redis.from_url(url), key, TTL_MS)
    assert await holder.acquire(blocking=False), "a free lock was not acquired"
    try:
        started = time.perf_counter()
        tried = bool(await waiter.acquire(blocking=False))
        try_s = time.perf_counter() - started
        started = time.perf_counter()
        waited = bool(await waiter.acquire(blocking=True, timeout=timeout))
        wait_s = time.perf_counter() - started
    finally:
        with contextlib.suppress(Exception):  # a lock that held nothing may refuse
            await holder.release()
    return {"tried": tried, "try_s": try_s, "waited": waited, "wait_s": wait_s}


#: A window long enough that nothing runs out while the probe runs.
WINDOW_MS = 60_000


def measure_hit(adapter: str, url: str, key: str) -> dict[str, Any]:
    """A limit of 1: the first hit, then a hit on the full window and how long its refusal took
    (a limiter that waits for room instead of refusing takes the window)."""
    module, name = adapter.split(":")
    factory = getattr(importlib.import_module(module), name)

    async def run_async() -> tuple[bool, bool, float]:
        limiter = factory(redis.asyncio.Redis.from_url(url), key, 1, WINDOW_MS)
        admitted = bool(await limiter.hit(1))
        started = time.perf_counter()
        return admitted, not await limiter.hit(1), time.perf_counter() - started

    shape = factory(redis.Redis.from_url(url), key + ":shape", 1, WINDOW_MS)
    if inspect.iscoroutinefunction(shape.hit):
        admitted, refused, refused_s = asyncio.run(run_async())
    else:
        limiter = factory(redis.Redis.from_url(url), key, 1, WINDOW_MS)
        admitted = bool(limiter.hit(1))
        started = time.perf_counter()
        refused = not limiter.hit(1)
        refused_s = time.perf_counter() - started
    return {"admitted": admitted, "refused": refused, "refused_s": refused_s}


def _quietly(release: Any) -> None:
    """Release, ignoring a refusal (a lock that held nothing, as sherlock's with expire=None)."""
    with contextlib.suppress(Exception):
        release()


if __name__ == "__main__":
    if sys.argv[4] == "hit":
        print(json.dumps(measure_hit(sys.argv[1], sys.argv[2], sys.argv[3])))
    else:
        print(json.dumps(measure(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]))))
