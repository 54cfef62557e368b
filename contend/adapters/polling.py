"""A blocking acquire for libraries that only offer a try: the library's own try, again and again.

Some libraries have no blocking acquire (a task queue's "is it already running?" lock, a rate
limiter's "may I?"): their users retry. The adapter does the same and nothing more: it calls
the library's own non-blocking try every `interval` seconds until it succeeds or `timeout`
runs out. Sleeps and clocks are the ones contend's scheduler makes virtual.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable

#: Seconds between tries (what a user of such a library typically sleeps is larger; contend's
#: clock is virtual under the scheduler, so the size only matters in real-time checks).
INTERVAL = 0.005


def poll(
    try_once: Callable[[], bool], blocking: bool, timeout: float | None, interval: float = INTERVAL
) -> bool:
    """`try_once()` until it is True (once only when not blocking; forever when timeout is None).
    The timeout counts from the call, the first try included: no try starts after it."""
    deadline = None if timeout is None else time.monotonic() + timeout
    if try_once():
        return True
    if not blocking:
        return False
    while deadline is None or time.monotonic() + interval < deadline:
        time.sleep(interval)
        if try_once():
            return True
    return False


async def poll_async(
    try_once: Callable[[], Awaitable[bool]], blocking: bool, timeout: float | None, interval: float = INTERVAL
) -> bool:
    """The coroutine version of `poll`: asyncio.sleep between tries, the loop's clock for the deadline."""
    loop = asyncio.get_running_loop()
    deadline = None if timeout is None else loop.time() + timeout
    if await try_once():
        return True
    if not blocking:
        return False
    while deadline is None or loop.time() + interval < deadline:
        await asyncio.sleep(interval)
        if await try_once():
            return True
    return False
