"""fastapi-limiter over pyrate-limiter's async RedisBucket, 1 request a minute: A reads its clock
and is preempted (a `now()` that sleeps; see pyrate_limiter_stale_stamp.py), B passes, A too.
Run: python tests/scoreboard/reproductions/fastapi_limiter_stale_stamp.py redis://127.0.0.1:6379/0
"""

import asyncio
import sys
import time
from concurrent.futures import ThreadPoolExecutor

import redis.asyncio
from fastapi import HTTPException
from fastapi_limiter.depends import WebSocketRateLimiter
from pyrate_limiter import Limiter, Rate, RedisBucket, SingleBucketFactory

# A bucket whose clock reading is followed by a pause: A is preempted after reading its clock.
Paused = type("Paused", (RedisBucket,), {"now": lambda self: (RedisBucket.now(self), time.sleep(0.3))[0]})


async def request(bucket_class: type, url: str, key: str) -> bool:
    bucket = await bucket_class.init([Rate(1, 60_000)], redis.asyncio.Redis.from_url(url), key)
    limiter = Limiter(SingleBucketFactory(bucket, False))
    try:  # the default callback raises HTTPException 429 when the limit is reached
        return await WebSocketRateLimiter(limiter, lambda ws: asyncio.sleep(0, "ip"))(None) is None
    except HTTPException:
        return False


def reproduce(url: str, key: str) -> dict[str, object]:
    with ThreadPoolExecutor() as pool:
        a = pool.submit(asyncio.run, request(Paused, url, key))
        time.sleep(0.1)
        return {"b_passed": asyncio.run(request(RedisBucket, url, key)), "a_passed": a.result()}


if __name__ == "__main__":
    print(reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"bucket-{time.time()}"))
