"""sherlock's RedisLock with expire=None ("never expire locks", its README): two holders at once.

Thread A acquires the lock and, while it holds it, thread B acquires it too. Both calls
return True, and the key is gone: the acquire script runs `EXPIRE key -1` (its guard
`ARGV[2] ~= -1` compares the string "-1" with the number -1), which deletes the key it
has just set.

    python tests/scoreboard/reproductions/sherlock_no_expiry.py redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import sys
import threading
import uuid

import redis
import sherlock


def reproduce(url: str, key: str) -> dict[str, object]:
    """What happened: whether A and B both acquired, and whether the key existed in between."""
    a_holds, b_done = threading.Event(), threading.Event()
    seen: dict[str, object] = {}

    def holder_a() -> None:
        lock = sherlock.RedisLock(key, client=redis.Redis.from_url(url), expire=None)
        seen["a_acquired"] = lock.acquire(blocking=False)
        seen["key_exists_while_a_holds"] = bool(redis.Redis.from_url(url).exists(key))
        a_holds.set()
        b_done.wait(5)  # A still holds the lock while B tries

    def holder_b() -> None:
        a_holds.wait(5)
        lock = sherlock.RedisLock(key, client=redis.Redis.from_url(url), expire=None)
        seen["b_acquired_while_a_holds"] = lock.acquire(blocking=False)
        b_done.set()

    threads = [threading.Thread(target=holder_a), threading.Thread(target=holder_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    return seen


if __name__ == "__main__":
    url = sys.argv[1] if len(sys.argv) > 1 else "redis://127.0.0.1:6379/0"
    result = reproduce(url, f"repro:sherlock:{uuid.uuid4().hex}")
    print(result)
    both = result.get("a_acquired") and result.get("b_acquired_while_a_holds")
    print("two holders at once: mutual exclusion broken" if both else "not reproduced")
    sys.exit(0 if both else 1)
