"""redis-lock-py: a waiter notices a lock that expired (rather than being released) late.

A takes the lock for 3 s and dies without releasing it, so no unlock message is published.
B waits with `acquire()`: it retries its SET only when its Pub/Sub wait times out, and the
wait grows (0.5 s, then 1.5 s, then 3.5 s), so B gets the lock about 5.5 s after it asked,
2.5 s after A's lease ran out.
Run: python tests/scoreboard/reproductions/redis_lock_py_backoff.py redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import sys
import time
import uuid

import redis
from redis_lock import RedisLock


def reproduce(url: str, key: str) -> dict[str, object]:
    """How long B waited after A's 3 s lease ran out."""
    client = redis.Redis.from_url(url)
    assert RedisLock(client, key, blocking_timeout=1, expire_timeout=3).acquire()  # A, then it dies
    asked = time.monotonic()
    got = RedisLock(client, key, blocking_timeout=30, expire_timeout=3).acquire()
    late = time.monotonic() - asked - 3
    return {"b_acquired": got, "b_noticed_2_s_late": late > 2}


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"lock-{uuid.uuid4().hex}")
    print(seen)
    sys.exit(0 if seen["b_noticed_2_s_late"] else 1)
