"""The limiter workload: every user hits one of `hot_keys` rate-limited keys as fast as it can, with
each correct rate limiter of the catalog (or the user's own, `--kind rate-limiter`).

Every decision counts as one operation (admitted or refused: a refusal is the limiter working),
so the run's rate is decisions per second, which the sweep sets against the raw round-trip
ceiling measured in the same run. Each key allows LIMIT hits per WINDOW_MS; after the run, what
was admitted on each key is set against what the limit allows over the run's length:

* accuracy: admitted ÷ (LIMIT × the run's windows), per key (1.0: the limiter admitted exactly its
  limit in every window; a token bucket's first full bucket and a fixed window's edges move it);
* the invariant: no key admitted more than LIMIT × (windows + 1), a bound every algorithm keeps
  over a run of that many windows (a fixed window's windows are disjoint and at most windows + 1
  of them meet the run; a log's every window holds LIMIT; a bucket adds one full bucket).
"""

from __future__ import annotations

import random
from typing import Any

import redis

from contend.impl import catalog
from contend.load.metrics import WINDOW, OperationMetrics, Tally
from contend.load.workload import SERVER, InvariantResult, LoadWorkload, Operation, Strategy
from contend.subject.subject import Subject

#: Hits each key allows per window: a few hundred users hitting as fast as they can saturate it.
LIMIT = 100
WINDOW_MS = 1_000


def _limiters() -> dict[str, tuple[Strategy, Any]]:
    found = {}
    for entry in catalog.family("rate_limiter"):
        summary = f"{entry.summary} ({LIMIT} per {WINDOW_MS} ms)"
        found[entry.name] = (Strategy(entry.name, SERVER, summary, entry.known_bad), entry.factory)
    return found


class LimiterWorkload(LoadWorkload):
    """Hit a rate-limited key: admitted or refused, each is one decision."""

    name = "limiter"
    summary = f"rate-limited hits ({LIMIT} per {WINDOW_MS} ms a key)"

    def all_strategies(self) -> dict[str, Strategy]:
        return {name: strategy for name, (strategy, _) in _limiters().items()}

    def keys(self, prefix: str, hot_keys: int) -> list[str]:
        return [f"{prefix}:limiter:{i}" for i in range(hot_keys)]

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
            factory = impl.factory
        else:
            self.strategy(strategy)
            factory = _limiters()[strategy][1]
        keys = self.keys(prefix, hot_keys)
        limiters = [factory(client, key, LIMIT, WINDOW_MS) for key in keys]
        rng = random.Random()

        def hit(step: OperationMetrics) -> None:
            index = rng.randrange(hot_keys)
            step.keys = (keys[index],)
            admitted = limiters[index].hit(1)
            step.committed = True  # a decision either way
            if admitted:
                step.deltas = {keys[index]: 1}

        return hit

    def check(
        self, client: redis.Redis, prefix: str, hot_keys: int, tally: Tally, impl: Subject | None = None
    ) -> InvariantResult:
        seconds = (max(tally.windows) - min(tally.windows) + 1) * WINDOW if tally.windows else 0.0
        windows = seconds * 1000 / WINDOW_MS
        bound = LIMIT * (windows + 1)
        problems, shares = [], []
        for key in self.keys(prefix, hot_keys):
            admitted = tally.per_key.get(key, [0, 0])[0]
            if admitted > bound:
                problems.append(
                    f"{key} admitted {admitted} in {seconds:.1f} s: more than {LIMIT} per {WINDOW_MS} ms allows "
                    f"({bound:.0f} over {windows:.1f} windows, one more included)"
                )
            if windows:
                shares.append(admitted / (LIMIT * windows))
        if problems:
            return InvariantResult(False, tuple(problems))
        accuracy = (
            f"admitted {min(shares):.2f}-{max(shares):.2f} × the limit a window"
            if shares
            else "nothing timed"
        )
        refused = tally.commits - sum(tally.per_key.get(k, [0, 0])[0] for k in self.keys(prefix, hot_keys))
        return InvariantResult(
            True,
            (
                f"{hot_keys} key(s), {tally.commits} decisions in {seconds:.1f} s ({refused} refused): {accuracy}, "
                f"within {LIMIT} per {WINDOW_MS} ms",
            ),
        )
