"""Beaker: a release that fails (a lost reply: ConnectionError) leaves the synchronizer's thread-local
state "writing", so the thread's next acquire returns True at once, without Redis, after its lease
ended and while another holds the lock. Run: python THIS redis://HOST:6379/0"""

import sys
import time
from concurrent.futures import ThreadPoolExecutor

import redis
from beaker.ext.redisnm import RedisSynchronizer

RedisSynchronizer.LOCK_EXPIRATION = 1  # a lease of 1 s instead of 900


def reply_lost(*args: object, **kwargs: object) -> None:
    raise redis.ConnectionError("the reply to WATCH was lost")


def reproduce(url: str, key: str) -> dict[str, object]:
    flaky = redis.Redis.from_url(url)
    a, seen = RedisSynchronizer(key, flaky), {}
    seen["a_acquired"] = a.acquire_write_lock(False)
    flaky.transaction = reply_lost  # A's release meets a network fault
    try:
        a.release_write_lock()
        seen["a_release_failed"] = False
    except redis.ConnectionError:
        seen["a_release_failed"] = True
    time.sleep(1.1)  # A's lease ends
    b = RedisSynchronizer(key, redis.Redis.from_url(url))
    with ThreadPoolExecutor(1) as other:  # B: another thread, so another owner
        seen["b_acquired"] = other.submit(b.acquire_write_lock, False).result()
    seen["a_acquired_again_while_b_holds"] = a.acquire_write_lock(False)
    return seen


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"beaker-{time.time_ns()}")
    sys.exit(print(seen) or (0 if all(seen.values()) else 1))
