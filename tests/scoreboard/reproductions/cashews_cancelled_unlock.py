"""cashews: a lock whose exit is cancelled stays held until it expires, and cannot be released.

A enters `backend.lock(key, expire=60)` and is cancelled while its exit awaits `unlock` (a
timeout, a shutdown): the context manager is finished, the key stays 60 s, B cannot lock.
Run: python tests/scoreboard/reproductions/cashews_cancelled_unlock.py redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import asyncio
import sys
import uuid

from cashews.backends.redis import Redis


async def scenario(url: str, key: str) -> dict[str, object]:
    backend = Redis(url)
    await backend.init()
    manager = backend.lock(key, expire=60)
    await manager.__aenter__()
    await backend._client.connection_pool.disconnect()  # the exit must connect: a real await
    exiting = asyncio.ensure_future(manager.__aexit__(None, None, None))
    await asyncio.sleep(0)  # the exit has started: it awaits a connection for unlock
    exiting.cancel()
    await asyncio.gather(exiting, return_exceptions=True)
    await manager.__aexit__(None, None, None)  # A exits again: nothing left to run
    b_acquired = await backend.set_lock(key, "b", expire=60)  # what B's lock() tries first
    return {"ttl_left": await backend.get_expire(key), "b_acquired": b_acquired}


def reproduce(url: str, key: str) -> dict[str, object]:
    return asyncio.run(scenario(url, key))


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"lock-{uuid.uuid4().hex}")
    print(seen)
    sys.exit(0 if seen["b_acquired"] is False else 1)
