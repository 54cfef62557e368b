"""celery-once: a task that outlived its lock's timeout clears its successor's lock.

A locks (timeout 1 s) and runs past it; B, queued after the lock expired, locks and runs; A
finishes and `clear_lock` (a plain DEL) removes B's lock; C is queued while B still runs.
Run: python tests/scoreboard/reproductions/celery_once_clear_lock.py redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import sys
import time
import uuid

from celery_once import AlreadyQueued
from celery_once.backends.redis import Redis as OnceRedis


def reproduce(url: str, key: str) -> dict[str, object]:
    """Whether B locked after A's timeout, and whether C locked while B held the lock."""
    backend = OnceRedis({"url": url})

    def locks() -> bool:
        try:
            backend.raise_or_lock(key, timeout=1)
        except AlreadyQueued:
            return False
        return True

    a = locks()
    time.sleep(1.1)  # A runs longer than its timeout: its lock expires
    b = locks()
    backend.clear_lock(key)  # A finishes: QueueOnce.after_return clears "its" lock
    return {"a_locked": a, "b_locked_after_a_expired": b, "c_locked_while_b_runs": locks()}


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"qo_{uuid.uuid4().hex}")
    print(seen)
    sys.exit(0 if all(seen.values()) else 1)
