"""celery-redbeat's beat lock (redbeat/schedulers.py): the lock that keeps a second `celery beat`
from running the schedule while one runs.

What it claims (README): "RedBeat uses a distributed lock to prevent multiple instances
running"; `redbeat_lock_timeout`: "Unless refreshed the lock will expire after this time, in
seconds". `acquire_distributed_beat_lock` (on `beat_init`) takes redis-py's
`lock(lock_key, timeout=lock_timeout, sleep=max_interval)`, replaces its extend script by
`LUA_EXTEND_TO_SCRIPT` (the TTL is set to the new time, not added to), and blocks in
`acquire()`; every `tick` calls `lock.extend(int(lock_timeout))`; `close()` releases it
if it is still `owned()`. `lock_timeout` defaults to five `max_interval`s.

Mapping: a Celery app whose `redbeat_redis` (the connection `get_redis` would make from
`redbeat_redis_url`) is the client contend gives, and a beat scheduler of that app with
`lock_key` = the key, `lock_timeout` = `ttl_ms` in whole seconds (the factory declares
`ttl_resolution_ms = 1000`) and `max_interval` = a fifth of it (redbeat's default ratio).
A blocking acquire without a timeout is `acquire_distributed_beat_lock` itself; a try, or
one with a timeout, builds the lock as that function does and calls `acquire(blocking=...,
blocking_timeout=timeout)` (redbeat's own function has neither). `extend(ttl_ms)` →
`lock.extend(seconds)` as a tick does; `release()` → as `close()`.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import redis
from celery import Celery  # type: ignore[import-not-found,import-untyped]
from redbeat import schedulers  # type: ignore[import-not-found,import-untyped]

from contend.adapters.fidelity import lease_probe
from contend.adapters.units import check_lease, whole_seconds

FIDELITY = (
    "lock_timeout is whole seconds (a tick extends by int(lock_timeout)), max_interval a fifth of it "
    "(redbeat's default ratio), the lock built as acquire_distributed_beat_lock builds it"
)


class RedbeatLock:
    """celery-redbeat's beat lock behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        seconds = whole_seconds(ttl_ms)
        app = Celery("contend", set_as_current=False)
        app.conf.redbeat_redis_url = "redis://127.0.0.1:1/0"  # never used: its client is set below
        setattr(app, schedulers.REDBEAT_REDIS_KEY, client)
        self.scheduler = SimpleNamespace(
            app=app, lock_key=key, lock_timeout=seconds, max_interval=seconds / 5, lock=None
        )

    def _lock(self) -> Any:
        """The lock as `acquire_distributed_beat_lock` makes it, not yet acquired."""
        s = self.scheduler
        client = schedulers.get_redis(s.app)
        lock = client.lock(s.lock_key, timeout=s.lock_timeout, sleep=s.max_interval)
        lock.lua_extend = client.register_script(schedulers.LUA_EXTEND_TO_SCRIPT)
        return lock

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if blocking and timeout is None:
            schedulers.acquire_distributed_beat_lock(sender=SimpleNamespace(scheduler=self.scheduler))
            return True
        lock = self._lock()
        if lock.acquire(blocking=blocking, blocking_timeout=timeout):
            self.scheduler.lock = lock
            return True
        return False

    def extend(self, ttl_ms: int) -> bool:
        check_lease("-", ttl_ms)
        return bool(self.scheduler.lock.extend(whole_seconds(ttl_ms)))

    def release(self) -> None:
        lock, self.scheduler.lock = self.scheduler.lock, None
        if lock is not None and lock.owned():
            lock.release()


def factory(client: redis.Redis, key: str, ttl_ms: int) -> RedbeatLock:
    """The lock-protocol factory."""
    return RedbeatLock(client, key, ttl_ms)


factory.ttl_resolution_ms = 1000  # type: ignore[attr-defined]


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 3000, seconds=True)
