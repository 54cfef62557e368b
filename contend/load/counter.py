"""The counter workload: seed 002's `ham`, a read-modify-write increment under WATCH, under each
correct lock of the catalog (or the user's lock), or as one atomic server-side step (INCR, a Lua
script: the ceiling); every counter must equal the increments that succeeded."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import redis
from redis.exceptions import WatchError

from contend.impl import catalog
from contend.load.instrument import LockTimer
from contend.load.metrics import OperationMetrics, Tally
from contend.load.workload import (
    LOCK,
    LOCK_TIMEOUT,
    OPTIMISTIC,
    SERVER,
    UNSAFE,
    WATCH_ATTEMPTS,
    InvariantResult,
    LoadWorkload,
    NoEffect,
    Operation,
    Strategy,
    backoff,
)
from contend.subject.subject import Subject


def _lock_strategies() -> dict[str, tuple[Strategy, Callable[..., Any]]]:
    """Every lock and semaphore of the catalog as a counter strategy: token is `lock_first`."""
    found: dict[str, tuple[Strategy, Callable[..., Any]]] = {}
    for entry in catalog.family("lock") + catalog.family("semaphore"):
        name = "lock_first" if entry.name == "token" else f"lock_{entry.name}"
        summary = f"{entry.name} lock, then GET and SET: {entry.summary}"
        found[name] = (Strategy(name, LOCK, summary, entry.known_bad), entry.factory)
    return found


class CounterWorkload(LoadWorkload):
    """Seed 002's `ham`: GET the counter, SET it one higher, under some protection."""

    name = "counter"
    summary = "read-modify-write counter (seed 002's ham)"

    # KEYS[1]: the counter. The counter one higher, as INCR would give it (GET and SET: the same steps).
    LUA = """
    local v = tonumber(redis.call('GET', KEYS[1]) or '0') + 1
    redis.call('SET', KEYS[1], v)
    return v
    """

    def all_strategies(self) -> dict[str, Strategy]:
        locks = {name: s for name, (s, _) in _lock_strategies().items()}
        return {
            "watch": Strategy("watch", OPTIMISTIC, "WATCH, GET, MULTI SET EXEC; retried on conflict"),
            **{n: s for n, s in locks.items() if not s.known_bad},
            "incr": Strategy("incr", SERVER, "INCR: one atomic command"),
            "lua": Strategy("lua", SERVER, "a script doing GET and SET: one atomic round trip"),
            "naive": Strategy("naive", UNSAFE, "GET then SET with no protection", known_bad=True),
            **{n: s for n, s in locks.items() if s.known_bad},
        }

    def keys(self, prefix: str, hot_keys: int) -> list[str]:
        return [f"{prefix}:ham:{i}" for i in range(hot_keys)]

    def operation(
        self,
        client: redis.Redis,
        prefix: str,
        strategy: str,
        hot_keys: int,
        ttl_ms: int,
        user_id: str,
        impl: Subject | None = None,
        shared: dict[str, Any] | None = None,
    ) -> Operation:
        if impl is not None:
            self.accept(impl)
            strategy, kind, factory = impl.name, LOCK, impl.factory
        else:
            kind = self.strategy(strategy).kind
        keys = self.keys(prefix, hot_keys)
        rng = random.Random()

        def pick(step: OperationMetrics) -> str:
            key = keys[rng.randrange(hot_keys)]
            step.keys = (key,)
            return key

        def commit(step: OperationMetrics, key: str) -> None:
            step.committed = True
            step.deltas = {key: 1}

        if strategy == "watch":

            def watch(step: OperationMetrics) -> None:
                key = pick(step)
                for attempt in range(WATCH_ATTEMPTS):
                    backoff(attempt)
                    with client.pipeline() as pipe:
                        try:
                            pipe.watch(key)
                            value = int(pipe.get(key) or 0)
                            pipe.multi()
                            pipe.set(key, value + 1)
                            pipe.execute()
                            commit(step, key)
                            return
                        except WatchError:
                            step.retries += 1
                raise NoEffect(f"gave up on {key!r} after {WATCH_ATTEMPTS} attempts aborted by conflicts")

            return watch
        if strategy == "incr":

            def incr(step: OperationMetrics) -> None:
                key = pick(step)
                client.incr(key)
                commit(step, key)

            return incr
        if strategy == "lua":
            script = client.register_script(self.LUA)

            def lua(step: OperationMetrics) -> None:
                key = pick(step)
                script(keys=[key])
                commit(step, key)

            return lua
        if strategy == "naive":

            def naive(step: OperationMetrics) -> None:
                key = pick(step)
                value = int(client.get(key) or 0)
                client.set(key, value + 1)
                commit(step, key)

            return naive
        assert kind == LOCK
        if impl is None:
            factory = _lock_strategies()[strategy][1]

        def locked(step: OperationMetrics) -> None:
            key = pick(step)
            timer = LockTimer(factory(client, f"{key}:lock", ttl_ms), client, step)
            if not timer.acquire(LOCK_TIMEOUT):
                raise NoEffect(f"could not take the lock on {key!r} within {LOCK_TIMEOUT:g} s")
            try:
                value = int(client.get(key) or 0)
                client.set(key, value + 1)
                commit(step, key)
            finally:
                timer.release()

        return locked

    def check(
        self, client: redis.Redis, prefix: str, hot_keys: int, tally: Tally, impl: Subject | None = None
    ) -> InvariantResult:
        problems: list[str] = []
        keys = self.keys(prefix, hot_keys)
        values = [int(v or 0) for v in client.mget(keys)]
        for key, value in zip(keys, values, strict=True):
            ok, maybe = tally.key_counts(key)
            if not ok <= value <= ok + maybe:
                extra = f" (and {maybe} more may have)" if maybe else ""
                what = (
                    f"{ok - value} lost updates"
                    if value < ok
                    else f"{value - ok - maybe} increments from nowhere"
                )
                problems.append(f"{key} is {value} but {ok} increments succeeded{extra}: {what}")
        if problems:
            return InvariantResult(False, tuple(problems))
        cut = (
            f" ({tally.unknown} of unknown outcome: raised, or cut short at the end)" if tally.unknown else ""
        )
        return InvariantResult(
            True,
            (
                f"{hot_keys} counter(s) hold {sum(values)} in total = {tally.commits} successful increments{cut}",
            ),
        )
