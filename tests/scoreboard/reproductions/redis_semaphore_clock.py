"""Redis-Semaphore: a live holder's token goes to another client before `stale_client_timeout`.

`current_time` joins TIME's seconds and microseconds as strings: 12:00:01 and 5123 µs reads as
12:00:01.5123. A takes the one token at 12:00:00.3; at 12:00:01.005, 0.7 s later, B's acquire
reads 12:00:01.5, finds A's grab older than 1 s and takes the token: two holders of one slot.
Run: python tests/scoreboard/reproductions/redis_semaphore_clock.py redis://127.0.0.1:6379/0
"""

import sys
import time
import uuid

import redis
import redis_semaphore


def at(client: redis.Redis, low: int, high: int) -> int:
    """Wait until the server's microseconds are in [low, high); its seconds then."""
    while not low <= (now := client.time())[1] < high:
        time.sleep(0.0005)
    return now[0]


def reproduce(url: str, key: str) -> dict[str, object]:
    client = redis.Redis.from_url(url)
    for n in range(5):  # a window missed on a busy machine is tried again
        a, b = (redis_semaphore.Semaphore(client, 1, f"{key}:{n}", 1, blocking=False) for _ in "ab")
        second, a_token, began = at(client, 300_000, 350_000), a.acquire(), time.monotonic()
        if at(client, 5_000, 9_000) == second + 1:  # 0.66 s to 0.71 s later: A still holds
            b_token = b.acquire()  # reads x.5 to x.9 s: A's grab looks older than 1 s
            return {"a": a_token, "b_while_a_holds": b_token, "within_1_s": time.monotonic() - began < 1}
    return {"a": None}


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"sem-{uuid.uuid4().hex}")
    print(seen)
    sys.exit(0 if seen.get("b_while_a_holds") else 1)
