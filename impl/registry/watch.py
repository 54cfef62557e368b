"""Optimistic WATCH/MULTI/EXEC: read the counter under WATCH, write everything in MULTI.

A name already registered costs one HGET. A new one costs WATCH, HMGET, GET
and one MULTI/EXEC block; when another client changes the counter or the
tables in between, EXEC aborts and the attempt is retried after a jittered,
exponentially growing pause, at most `max_retries` times.
"""

from __future__ import annotations

import random
import threading
import time
from typing import Any

import redis
from redis.exceptions import WatchError

from contend.impl.registry.base import CommittingRegistry, RetriesExhausted


class WatchRegistry(CommittingRegistry):
    strategy = "watch"

    def __init__(
        self,
        client: redis.Redis,
        namespace: str,
        *,
        registry: str = "registry",
        max_retries: int = 1000,
        backoff_base: float = 0.0005,
        backoff_cap: float = 0.02,
    ) -> None:
        super().__init__(client, namespace, registry=registry)
        if max_retries < 1:
            raise ValueError(f"max_retries must be >= 1, got {max_retries}")
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap
        #: EXEC aborts seen so far (each one a retry), for load reports.
        self.conflicts = 0
        self._stats_lock = threading.Lock()

    def _commit(self, names: list[str]) -> dict[str, int]:
        """Give each of `names` (distinct) an id in one transaction, retrying on conflict."""
        k = self.keys
        for attempt in range(self.max_retries):
            if attempt:
                pause = min(self.backoff_cap, self.backoff_base * 2 ** min(attempt, 16))
                time.sleep(random.uniform(0, pause))
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(k.counter, k.ids)
                    current = pipe.hmget(k.ids, names)
                    ids = {n: int(v) for n, v in zip(names, current, strict=True) if v is not None}
                    new = [n for n in names if n not in ids]
                    if not new:
                        return ids
                    top = int(pipe.get(k.counter) or 0)
                    assigned: dict[Any, Any] = {n: top + i for i, n in enumerate(new, start=1)}
                    pipe.multi()
                    pipe.set(k.counter, top + len(new))
                    pipe.hset(k.ids, mapping=assigned)
                    pipe.hset(k.names, mapping={i: n for n, i in assigned.items()})
                    pipe.execute()
                    ids.update(assigned)
                    return ids
                except WatchError:
                    with self._stats_lock:
                        self.conflicts += 1
        more = f" and {len(names) - 1} more" if len(names) > 1 else ""
        raise RetriesExhausted(
            f"watch registry: gave up registering {names[0]!r}{more} after "
            f"{self.max_retries} attempts, each aborted by another client changing "
            f"{k.counter}; raise max_retries or use the lua strategy under this contention"
        )
