"""Lock first, then read and write: a token lock serializes every new registration.

A name already registered costs one HGET and no lock. A new one takes the
registry's lock (SET NX PX with a token), re-reads the table and the counter,
writes the counter and both tables in one MULTI/EXEC, then releases with
compare-and-delete.
If the holder stalls past the lock's TTL another client may enter too; the
TTL (default 10 s) must exceed any registration's duration.
"""

from __future__ import annotations

from typing import Any

import redis

from contend.impl.locks.token import TokenLock
from contend.impl.registry.base import CommittingRegistry, RegistrationError


class LockFirstRegistry(CommittingRegistry):
    strategy = "lock_first"

    def __init__(
        self,
        client: redis.Redis,
        namespace: str,
        *,
        registry: str = "registry",
        ttl_ms: int = 10_000,
        timeout: float = 30.0,
    ) -> None:
        super().__init__(client, namespace, registry=registry)
        self.ttl_ms = ttl_ms
        self.timeout = timeout

    def _commit(self, names: list[str]) -> dict[str, int]:
        k = self.keys
        lock = TokenLock(self.client, k.lock, self.ttl_ms)
        if not lock.acquire(timeout=self.timeout):
            raise RegistrationError(f"lock-first registry: could not take {k.lock!r} within {self.timeout} s")
        try:
            current = self.client.hmget(k.ids, names)
            ids = {n: int(v) for n, v in zip(names, current, strict=True) if v is not None}
            new = [n for n in names if n not in ids]
            if new:
                # Read the counter, then write counter and both tables in one MULTI/EXEC:
                # a client that dies in between leaves no gap and no half-written name.
                top = int(self.client.get(k.counter) or 0)
                assigned: dict[Any, Any] = {n: top + i for i, n in enumerate(new, start=1)}
                with self.client.pipeline() as pipe:
                    pipe.set(k.counter, top + len(new))
                    pipe.hset(k.ids, mapping=assigned)
                    pipe.hset(k.names, mapping={i: n for n, i in assigned.items()})
                    pipe.execute()
                ids.update(assigned)
            return ids
        finally:
            lock.release()
