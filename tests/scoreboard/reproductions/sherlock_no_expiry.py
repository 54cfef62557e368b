"""sherlock's RedisLock with expire=None ("never expire locks", its README): two holders at once.

A acquires and, while it holds the lock, B acquires too: both get True and the key is gone. The
acquire script's guard `ARGV[2] ~= -1` compares the string "-1" with the number -1, so it runs
`EXPIRE key -1`, which deletes the key it has just set.
Run: python tests/scoreboard/reproductions/sherlock_no_expiry.py redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import sys
import uuid

import redis
import sherlock


def reproduce(url: str, key: str) -> dict[str, object]:
    """Whether A and B both acquired, and whether the key existed while A held it."""
    a = sherlock.RedisLock(key, client=redis.Redis.from_url(url), expire=None)
    b = sherlock.RedisLock(key, client=redis.Redis.from_url(url), expire=None)
    seen: dict[str, object] = {"a_acquired": a.acquire(blocking=False)}
    seen["key_exists_while_a_holds"] = bool(redis.Redis.from_url(url).exists(key))
    seen["b_acquired_while_a_holds"] = b.acquire(blocking=False)
    return seen


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"repro:{uuid.uuid4().hex}")
    print(seen)
    sys.exit(0 if seen["a_acquired"] and seen["b_acquired_while_a_holds"] else 1)
