"""Beaker: RedisSynchronizer's release is WATCH, GET, DEL (no MULTI). A stalls after its GET, its lease
ends, B locks, A's DEL frees B's lock, C locks while B holds it. Run: python THIS redis://HOST:6379/0"""

import sys
import threading
import time

import redis
from beaker.ext.redisnm import RedisSynchronizer

RedisSynchronizer.LOCK_EXPIRATION = 1  # a lease of 1 s instead of 900
got = threading.Event()  # A's release has read its own lock


def lock(url: str, key: str, stall: float = 0.0) -> RedisSynchronizer:
    client = redis.Redis.from_url(url)
    real = client.transaction  # A pauses `stall` s after the GET of its release's transaction
    client.transaction = lambda func, *w: real(
        lambda p: (setattr(p, "get", lambda n, g=p.get: (g(n), got.set(), time.sleep(stall))[0]), func(p)), *w
    )
    return RedisSynchronizer(key, client)


def reproduce(url: str, key: str) -> dict[str, object]:
    a, seen = lock(url, key, stall=2.0), {}
    a_run = threading.Thread(
        target=lambda: seen.update(a_acquired=a.acquire_write_lock(0)) or a.release_write_lock()
    )
    a_run.start()
    got.wait(5) and time.sleep(1.1)  # A's GET saw its own lock; its lease ends while A stalls
    seen["b_acquired_after_a_expired"] = lock(url, key).acquire_write_lock(False)
    a_run.join()  # A's DEL: B's lock is gone
    seen["c_acquired_while_b_holds"] = lock(url, key).acquire_write_lock(False)
    return seen


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"beaker-{time.time_ns()}")
    sys.exit(print(seen) or (0 if all(seen.values()) else 1))
