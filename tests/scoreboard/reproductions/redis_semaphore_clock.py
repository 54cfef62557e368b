"""Redis-Semaphore: its clock reads the server's microseconds as a decimal fraction.

`current_time` joins TIME's seconds and microseconds as strings ("." between them), so
12:00:00 and 5123 µs reads as 12:00:00.5123, half a second late, whenever the microseconds
have fewer than six digits: stale tokens come back late, or early, by up to a second.
Run: python tests/scoreboard/reproductions/redis_semaphore_clock.py redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import sys
import time
import uuid

import redis
import redis_semaphore


def reproduce(url: str, key: str) -> dict[str, object]:
    """The largest error of `current_time` against the server's TIME, read every 10 ms for 1.2 s."""
    client = redis.Redis.from_url(url)
    sem = redis_semaphore.Semaphore(client, 1, key, stale_client_timeout=1)
    worst = 0.0
    for _ in range(120):  # over more than a second: some readings fall in its first 100 ms
        time.sleep(0.01)
        seconds, micros = client.time()
        read = sem.current_time
        worst = max(worst, read - (seconds + micros / 1e6))
    return {"reads_more_than_100_ms_late": worst > 0.1}


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"sem-{uuid.uuid4().hex}")
    print(seen)
    sys.exit(0 if seen["reads_more_than_100_ms_late"] else 1)
