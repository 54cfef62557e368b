"""pottery's `NextID` (pottery/nextid.py): IDs from a counter kept on one or more masters.

What it claims: "Distributed Redis-powered monotonically increasing ID generator", which
"safely and reliably produces monotonically increasing IDs across threads, processes, and even
machines, without a single point of failure", with two caveats: "there may be 'holes' in the
sequence of IDs" and a draw that cannot reach a quorum after `num_tries` (3) raises
QuorumNotAchieved. A draw reads the current id from the masters and sets the next one with a
script that only moves it forward.

Mapping: the ID-generator protocol (contend.scoreboard.ids): `factory(client, key)` →
`NextID(key=key, masters={client})`, `next()` → `next(ids)`. Its key is pottery's
`nextid:<key>`. Nothing to convert: no TTL, no unit.
"""

from __future__ import annotations

from typing import Any

import redis
from pottery import NextID  # type: ignore[import-not-found,import-untyped]

FIDELITY = "nothing is converted (no TTL, no unit): one NextID per client over the client's server, num_tries its default"


class PotteryNextID:
    """pottery's NextID behind the ID-generator protocol."""

    def __init__(self, client: redis.Redis, key: str) -> None:
        if not key:
            raise ValueError("an ID generator needs a non-empty key")
        self.ids: Any = NextID(key=key, masters={client})

    def next(self) -> int:
        return int(next(self.ids))


def factory(client: redis.Redis, key: str) -> PotteryNextID:
    """The ID-generator factory."""
    return PotteryNextID(client, key)


def fidelity(client: redis.Redis, key: str) -> str:
    first, second = factory(client, key), factory(client, key)
    drawn = [first.next(), second.next(), first.next()]
    stored = int(client.get(f"nextid:{key}") or 0)
    assert drawn == [1, 2, 3] and stored == 3, f"drew {drawn}, nextid:<key> holds {stored}"
    return "two clients drew 1, 2 → 3 on nextid:<key>, as its docstring's example"
