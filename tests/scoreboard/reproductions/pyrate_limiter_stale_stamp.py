"""pyrate-limiter: a RedisBucket with a limit of 1 admits two hits in one window. A hit's time is
read (`RedisBucket.now()`) before its script, which counts entries stamped up to it only (`ZCOUNT
bucket start now`): A reads its clock and is preempted (a bucket whose `now()` waits, the README's
way to change the clock) while B hits; both are admitted.
Run: python tests/scoreboard/reproductions/pyrate_limiter_stale_stamp.py redis://127.0.0.1:6379/0
"""

import sys
import threading
import time

import redis
from pyrate_limiter import Limiter, Rate, RedisBucket, SingleBucketFactory


def reproduce(url: str, key: str) -> dict[str, object]:
    client, b_hit, seen = redis.Redis.from_url(url), threading.Event(), {}

    class Paused(RedisBucket):
        def now(self) -> int:
            stamp = super().now()
            b_hit.wait(5)  # A is preempted here, after reading its clock
            return stamp

    a, b = (
        Limiter(SingleBucketFactory(c.init([Rate(1, 60_000)], client, key), False))
        for c in (Paused, RedisBucket)
    )
    thread = threading.Thread(target=lambda: seen.update(a_admitted=a.try_acquire("a", blocking=False)))
    thread.start()
    time.sleep(0.01)
    seen["b_admitted"] = b.try_acquire("b", blocking=False)
    b_hit.set()
    thread.join()
    return {**seen, "entries_in_the_window": client.zcard(key)}


if __name__ == "__main__":
    print(reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"bucket-{time.time()}"))
