"""`contend bench registry`: register() rates and register_many() times, against raw round trips."""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from contend.benchmarks.rates import Rate, interleaved, measure_concurrent, median_seconds, raw_rates
from contend.impl.catalog import SEED_LAYOUT_DBS, Implementation, family
from contend.servers.keyspace import Namespace
from contend.servers.target import Target


@dataclass(frozen=True)
class RegistryFigures:
    name: str
    known_bad: bool
    one_client: Rate
    one_ratio: float  # median over alternating slices of register() / INCR, one client each
    many_clients: Rate
    batch_seconds: float


@dataclass(frozen=True)
class RegistryBench:
    raw_one: Rate
    raw_many: Rate
    clients: int
    batch: int
    rows: list[RegistryFigures]


def bench_registry(
    target: Target,
    run_ns: Namespace,
    *,
    seconds: float = 1.0,
    clients: int = 16,
    batch: int = 10_000,
    implementations: list[Implementation] | None = None,
    on_step: Callable[[str], None] = lambda s: None,
) -> RegistryBench:
    on_step("raw round trips")
    raw_one, raw_many = raw_rates(target, clients, seconds, ("INCR", run_ns.key("bench", "raw")))
    rows = []
    for impl in implementations or family("registry"):
        on_step(impl.name)
        rows.append(_bench_one(target, run_ns, impl, seconds, clients, batch))
    return RegistryBench(raw_one, raw_many, clients, batch, rows)


def _bench_one(
    target: Target, run_ns: Namespace, impl: Implementation, seconds: float, clients: int, batch: int
) -> RegistryFigures:
    conns: list[redis.Redis] = [target.client() for _ in range(clients)]
    pinger = target.client()
    raw_key = run_ns.key("bench", "raw")
    dbs = SEED_LAYOUT_DBS if impl.name.startswith("seed_layout") else ()

    def space(tag: str) -> Namespace:
        return Namespace(run_ns.client, run_ns.key("bench", impl.name, tag), dbs=dbs)

    try:
        ns = space("one")
        reg = impl.factory(conns[0], ns.prefix)
        fresh = itertools.count()  # every call a new name: slices restart their own counts
        _, one, one_ratio = interleaved(
            lambda i: pinger.incr(raw_key), lambda i: reg.register(f"n{next(fresh)}"), seconds
        )
        ns.cleanup()

        ns = space("many")
        regs = [impl.factory(c, ns.prefix) for c in conns]
        many = measure_concurrent(
            [functools.partial(_register_as, r, k) for k, r in enumerate(regs)], seconds
        )
        ns.cleanup()

        names = [f"batch-{i}" for i in range(batch)]
        spaces: list[Namespace] = []

        def one_batch() -> None:
            spaces.append(space(f"batch{len(spaces)}"))
            impl.factory(conns[0], spaces[-1].prefix).register_many(names)

        batch_seconds = median_seconds(one_batch)
        for s in spaces:
            s.cleanup()
        return RegistryFigures(impl.name, impl.known_bad, one, one_ratio, many, batch_seconds)
    finally:
        for c in [*conns, pinger]:
            c.close()


def _register_as(reg: Any, client_no: int, i: int) -> None:
    reg.register(f"c{client_no}-{i}")
