"""Redis-Semaphore: a client that dies right after its first command blocks the semaphore for ever.

The first acquire of a semaphore runs `GETSET <ns>:EXISTS ok`, then creates the tokens
(`_init`). A client that dies between the two leaves EXISTS with no TTL and no tokens: every
later acquire sees EXISTS, skips the creation and finds nothing, whatever
`stale_client_timeout` says.
Run: python tests/scoreboard/reproductions/redis_semaphore_crash.py redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import sys
import time
import uuid

import redis
import redis_semaphore


def reproduce(url: str, key: str) -> dict[str, object]:
    """What a second client gets, well after the first one died."""
    client = redis.Redis.from_url(url)
    options = {"count": 2, "namespace": key, "stale_client_timeout": 0.2, "blocking": False}
    first = redis_semaphore.Semaphore(client, **options)
    client.getset(first.check_exists_key, first.exists_val)  # its first command, then it dies
    time.sleep(0.5)  # more than stale_client_timeout
    second = redis_semaphore.Semaphore(client, **options)
    try:
        second.acquire()
        acquired = True
    except redis_semaphore.NotAvailable:
        acquired = False
    return {"exists_ttl": client.ttl(second.check_exists_key), "second_acquired": acquired}


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"sem-{uuid.uuid4().hex}")
    print(seen)
    sys.exit(0 if seen == {"exists_ttl": -1, "second_acquired": False} else 1)
