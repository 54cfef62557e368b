"""Redis-Semaphore: a holder whose token was reclaimed as stale releases its successor's slot.

Tokens are the numbers 0..count-1. A takes token 0 (count 1) and stalls past
`stale_client_timeout`; B's acquire gives the stale token back and takes it; A's release
finds token 0 grabbed (by B) and gives it back again; C takes it while B still holds it.
Run: python tests/scoreboard/reproductions/redis_semaphore_token_reuse.py redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import sys
import time
import uuid

import redis
import redis_semaphore


def reproduce(url: str, key: str) -> dict[str, object]:
    """Who held the one slot: A, then B after A's timeout, then C while B held it."""
    client = redis.Redis.from_url(url)
    a, b, c = (redis_semaphore.Semaphore(client, 1, key, stale_client_timeout=0.2) for _ in range(3))
    seen: dict[str, object] = {"a_token": a.acquire(timeout=1)}
    time.sleep(1.2)  # past the timeout, and past the second its clock reading can be off by
    seen["b_token"] = b.acquire(timeout=1)  # first gives A's stale token back
    seen["a_released"] = a.release() is not None  # A's late release: B's token goes back
    try:
        seen["c_token_while_b_holds"] = c.acquire(timeout=1)
    except redis_semaphore.NotAvailable:
        seen["c_token_while_b_holds"] = None
    return seen


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"sem-{uuid.uuid4().hex}")
    print(seen)
    sys.exit(0 if seen["c_token_while_b_holds"] is not None else 1)
