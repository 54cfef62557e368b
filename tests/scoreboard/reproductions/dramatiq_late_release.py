"""dramatiq: a ConcurrentRateLimiter of size 1 ("a distributed mutex") admits two holders.

A takes the slot (ttl 200 ms) and runs past it; B takes the slot after the key expired; A
leaves its `acquire()` block, whose release decrements the shared counter B set; C then
takes the slot while B is still inside.
Run: python tests/scoreboard/reproductions/dramatiq_late_release.py redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import sys
import time
import uuid

import redis
from dramatiq.rate_limits import ConcurrentRateLimiter
from dramatiq.rate_limits.backends import RedisBackend


def reproduce(url: str, key: str) -> dict[str, object]:
    """Who got the slot: A, then B after A's ttl ran out, then C while B held it."""
    mutex = ConcurrentRateLimiter(RedisBackend(client=redis.Redis.from_url(url)), key, limit=1, ttl=200)
    seen: dict[str, object] = {}
    with mutex.acquire(raise_on_failure=False) as a:
        seen["a_acquired"] = a
        time.sleep(0.3)  # A runs longer than the ttl: the counter key expires
        b_block = mutex.acquire(raise_on_failure=False)
        seen["b_acquired_after_a_expired"] = b_block.__enter__()
    # A has left its block: its release took B's slot back
    with mutex.acquire(raise_on_failure=False) as c:
        seen["c_acquired_while_b_holds"] = c
    b_block.__exit__(None, None, None)
    return seen


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"mutex-{uuid.uuid4().hex}")
    print(seen)
    sys.exit(0 if all(seen.values()) else 1)
