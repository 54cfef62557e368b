"""huey's `lock_task` (huey/api.py, `TaskLock`) on its Redis storage (`RedisHuey`): the lock a
huey task takes so that two invocations never run at once.

What it claims: `TaskLock` "Utilize[s] the Storage key/value APIs to implement simple locking";
its acquire is the storage's `put_if_empty(key, '1', ttl)`, "Atomically write data only if the
key is not already set" (on Redis: `HSETNX huey.results.<name> <name>.lock.<lock> 1`), its
release `delete(key)` (HDEL). Without `ttl` (the default) the lock never expires: a worker
that dies holding it leaves it until `flush_locks()`, which the consumer runs when it starts.
No blocking acquire (a held lock raises TaskLockedException), no extend, no fencing token.

Mapping: `RedisHuey(name=<key>, connection_pool=<the client's pool>)` (its documented
`connection_pool` argument; `clean_name=False` keeps the key's separators so the storage's
keys stay in contend's namespace). `acquire()` → `lock_task(name).acquire()`:
TaskLockedException is a False; a blocking acquire calls it again every 5 ms until the
timeout (contend.adapters.polling: its users retry the task). `release()` → `release()`.
`ttl_ms` is not passed: the row is the default lock without expiry, which claims no lease.
"""

from __future__ import annotations

from typing import Any

import redis
from huey import RedisHuey  # type: ignore[import-not-found,import-untyped]
from huey.exceptions import TaskLockedException  # type: ignore[import-not-found,import-untyped]

from contend.adapters.polling import poll
from contend.adapters.units import check_lease

FIDELITY = "the default lock_task (no ttl: it never expires), on RedisHuey over the client's pool"
LOCK_NAME = "lock"


class HueyTaskLock:
    """huey's TaskLock behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        huey: Any = RedisHuey(key, connection_pool=client.connection_pool, clean_name=False)
        self.lock: Any = huey.lock_task(LOCK_NAME)

    def _try(self) -> bool:
        try:
            return bool(self.lock.acquire())
        except TaskLockedException:
            return False

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return poll(self._try, blocking, timeout)

    def release(self) -> None:
        self.lock.release()


def factory(client: redis.Redis, key: str, ttl_ms: int) -> HueyTaskLock:
    """The lock-protocol factory."""
    return HueyTaskLock(client, key, ttl_ms)


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server: the lock's hash field, and no expiry on it."""
    lock = factory(client, key, 1000)
    assert lock.acquire(blocking=False), "a free lock was not acquired"
    stored = f"huey.results.{key}"
    field = f"{key}.lock.{LOCK_NAME}"
    assert client.hexists(stored, field), f"no {field} in {stored}"
    ttl = client.ttl(stored)
    lock.release()
    assert ttl == -1 and not client.hexists(stored, field), "the lock expires or outlived its release"
    return f"HSETNX <ns>.results field {LOCK_NAME}, no TTL (ttl {ttl}); HDEL on release"
