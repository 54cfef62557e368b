"""django-redis's `cache.lock(key, ...)` (django_redis/client/default.py, `DefaultClient.lock`):
the lock a Django site takes through its cache.

What it claims (README, "Locks"): "It also supports the Redis ability to create Redis
distributed named locks. The Lock interface is identical to the ``threading.Lock`` so you
can use it as replacement." `lock(key, version=None, timeout=None, sleep=0.1, blocking=True,
blocking_timeout=None, client=None, thread_local=True)` makes the cache key (`:1:<key>`, its
KEY_PREFIX and version) and returns redis-py's `client.lock(...)` with those arguments.

Mapping: `ttl_ms` → `timeout` in seconds, exactly (redis-py sends int(timeout * 1000) ms;
the seconds are nudged up until that gives `ttl_ms` back). `acquire(blocking, timeout)` →
`cache.lock(key, timeout=..., client=client)` then `acquire(blocking=..., blocking_timeout=
timeout)`, with `sleep` its default 0.1 s; `release()` → `release()`; `extend(ttl_ms)` →
`extend(seconds, replace_ttl=True)`. The cache is django-redis's `RedisCache`; its
documented `client` argument of `lock` is the client contend gives (Django's settings are
configured with nothing but DEBUG off when no project configured them).
"""

from __future__ import annotations

from typing import Any

import redis

from contend.adapters.fidelity import lease_probe
from contend.adapters.units import check_lease, seconds_truncated_to

FIDELITY = (
    "timeout is seconds sent as int(timeout * 1000) ms and truncates back to ttl_ms exactly; sleep is "
    "its default; the key is the cache's own (:1:<key>)"
)


def cache() -> Any:
    """A django-redis `RedisCache` (Django settings configured bare when no project did)."""
    from django.conf import settings  # type: ignore[import-not-found,import-untyped]

    if not settings.configured:
        settings.configure(DEBUG=False)
    from django_redis.cache import RedisCache  # type: ignore[import-not-found,import-untyped]

    return RedisCache("redis://127.0.0.1:1/0", {})  # never connects: every lock is given its client


class DjangoRedisLock:
    """django-redis's cache lock behind contend's lock protocol."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.lock: Any = cache().lock(key, timeout=seconds_truncated_to(ttl_ms), client=client)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return bool(self.lock.acquire(blocking=blocking, blocking_timeout=timeout))

    def release(self) -> None:
        self.lock.release()

    def extend(self, ttl_ms: int) -> bool:
        check_lease("-", ttl_ms)
        return bool(self.lock.extend(seconds_truncated_to(ttl_ms), replace_ttl=True))


def factory(client: redis.Redis, key: str, ttl_ms: int) -> DjangoRedisLock:
    """The lock-protocol factory."""
    return DjangoRedisLock(client, key, ttl_ms)


def fidelity(client: redis.Redis, key: str) -> str:
    """What the library left on the server for a lease taken through the adapter."""
    return lease_probe(factory, client, key, 1501, stored=f":1:{key}")
