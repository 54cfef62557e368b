"""huey: a release() by a worker that does not hold the lock_task lock frees the holder's.

A holds the lock; B's acquire is refused (TaskLockedException); B then calls release() (its
`clear`, an HDEL of the lock's field) and C acquires while A still runs.
Run: python tests/scoreboard/reproductions/huey_lock_release.py redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import sys
import uuid

from huey import RedisHuey
from huey.exceptions import TaskLockedException


def reproduce(url: str, key: str) -> dict[str, object]:
    """Whether B was refused while A held the lock, and whether C got it after B's release."""
    a, b, c = (RedisHuey(key, url=url, clean_name=False).lock_task("job") for _ in range(3))
    a_acquired = a.acquire()
    try:
        b.acquire()
        b_refused = False
    except TaskLockedException:
        b_refused = True
    b.release()  # B lets go of a lock it never held
    c_acquired = c.acquire()
    a.release()
    return {"a_acquired": a_acquired, "b_refused": b_refused, "c_acquired_while_a_holds": c_acquired}


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"huey-{uuid.uuid4().hex}")
    print(seen)
    sys.exit(0 if all(seen.values()) else 1)
