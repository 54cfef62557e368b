"""The one registry of implementations: what each claims and what it is known to violate.

An implementation with any known violation is KNOWN-BAD. It is kept on purpose
so contend can keep proving that it catches it; never "fix" one. This is the
only place that says which implementations are known-bad.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis

from impl import registry as reg

# Properties a registry can claim (checked by contend's registry battery).
UNIQUE_IDS = "unique-ids"  # distinct names get distinct ids
STABLE_IDS = "stable-ids"  # the same name always gets the same id
GAP_FREE = "gap-free"  # ids are exactly 1..n
TABLES_AGREE = "tables-agree"  # forward and inverse tables are mirror images
NO_SPURIOUS_ERRORS = "no-spurious-errors"  # concurrent registration never fails
REGISTRY_PROPERTIES = frozenset({UNIQUE_IDS, STABLE_IDS, GAP_FREE, TABLES_AGREE, NO_SPURIOUS_ERRORS})


@dataclass(frozen=True)
class Implementation:
    """One entry: how to build it, which model checks it, what it claims and violates."""

    name: str
    family: str
    factory: Callable[..., Any]
    model: str
    summary: str
    source: str = ""
    claims: frozenset[str] = field(default_factory=frozenset)
    violates: frozenset[str] = field(default_factory=frozenset)

    @property
    def known_bad(self) -> bool:
        return bool(self.violates)


#: The seed's databases: counter, forward, inverse. Namespace cleanup must visit them.
SEED_LAYOUT_DBS = (15, 14, 13)


def _seed_layout(strategy: str) -> Callable[[redis.Redis, str], reg.Registerer]:
    """A factory putting the seed's three databases (15, 14, 13) on the client's server."""

    def factory(client: redis.Redis, namespace: str) -> reg.Registerer:
        return reg.Registerer(
            "count", *SEED_LAYOUT_DBS, strategy=strategy, prefix=f"{namespace}:", client=client
        )

    factory.__name__ = f"seed_layout_{strategy}"
    return factory


_ALL_REGISTRY = REGISTRY_PROPERTIES
_RACY = frozenset({NO_SPURIOUS_ERRORS, GAP_FREE})

IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation(
        "naive", "registry", reg.NaiveRegistry, "registry",
        "GET, INCR, SETNX in separate round trips (seed's register_naive)",
        "seed 000", _ALL_REGISTRY, _RACY,
    ),
    Implementation(
        "seed_transaction", "registry", reg.SeedTransactionRegistry, "registry",
        "the seed's final code: transaction() whose INCR runs outside MULTI",
        "seed 000", _ALL_REGISTRY, _RACY,
    ),
    Implementation(
        "watch", "registry", reg.WatchRegistry, "registry",
        "WATCH counter+table, GET, MULTI/EXEC; jittered bounded retries",
        "seed 003", _ALL_REGISTRY,
    ),
    Implementation(
        "lock_first", "registry", reg.LockFirstRegistry, "registry",
        "token lock (SET NX PX), then read, INCRBY and write",
        "seed 003", _ALL_REGISTRY,
    ),
    Implementation(
        "lua", "registry", reg.LuaRegistry, "registry",
        "one server-side script: HGET, INCR, HSET, HSET",
        "", _ALL_REGISTRY,
    ),
    Implementation(
        "seed_layout", "registry", _seed_layout("seed_transaction"), "registry",
        "seed 000 as published: Registerer on three databases",
        "seed 000", _ALL_REGISTRY, _RACY,
    ),
    Implementation(
        "seed_layout_lua", "registry", _seed_layout("lua"), "registry",
        "Registerer on three databases, made safe by one script",
        "seed 000", _ALL_REGISTRY,
    ),
)  # fmt: skip


def by_name(name: str) -> Implementation:
    """The entry called `name`; KeyError lists the known names."""
    for impl in IMPLEMENTATIONS:
        if impl.name == name:
            return impl
    known = ", ".join(i.name for i in IMPLEMENTATIONS)
    raise KeyError(f"no implementation called {name!r}; known: {known}")


def family(name: str) -> list[Implementation]:
    """Every entry of one family, in catalog order."""
    return [i for i in IMPLEMENTATIONS if i.family == name]
