"""How long an adapter's acquire of a held lock takes: one try, and a blocking acquire with a
timeout. Run here, or as a script inside a library's own environment:

    python tests/adapters/timing_probe.py MODULE:FACTORY REDIS_URL KEY TIMEOUT

prints {"tried": bool, "try_s": float, "waited": bool, "wait_s": float} as JSON.
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


def _quietly(release: Any) -> None:
    """Release, ignoring a refusal (a lock that held nothing, as sherlock's with expire=None)."""
    with contextlib.suppress(Exception):
        release()


if __name__ == "__main__":
    print(json.dumps(measure(sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]))))
