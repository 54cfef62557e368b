"""celery-singleton: a task that outlived its lock_expiry unlocks its successor's lock.

A locks (expiry 1 s) and runs past it; B locks after A's lock expired; A finishes and
`unlock` (a plain DEL) removes B's lock; C then locks while B still runs.
Run: python tests/scoreboard/reproductions/celery_singleton_unlock.py redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import sys
import time
import uuid

from celery_singleton.backends.redis import RedisBackend


def reproduce(url: str, key: str) -> dict[str, object]:
    """Whether B locked after A's expiry, and whether C locked while B held the lock."""
    backend = RedisBackend(url)
    a = backend.lock(key, "task-a", expiry=1)
    time.sleep(1.1)  # A runs longer than its lock_expiry
    b = backend.lock(key, "task-b", expiry=1)
    backend.unlock(key)  # A finishes: Singleton.on_success unlocks "its" lock
    c = backend.lock(key, "task-c", expiry=1)
    return {"a_locked": a, "b_locked_after_a_expired": b, "c_locked_while_b_runs": c}


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"singleton-{uuid.uuid4().hex}")
    print(seen)
    sys.exit(0 if all(seen.values()) else 1)
