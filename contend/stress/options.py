"""The options of a stress run (`StressOptions`, the CLI's, with the same defaults), checked
before anything starts (`validate`): bad input is ContendError (exit 2), one line."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from contend.errors import ContendError
from contend.impl.catalog import by_name
from contend.servers.cluster import check_cluster_option
from contend.servers.urls import is_cluster_url, is_sentinel_url
from contend.stress.nemesis import parse_nemeses, unreachable
from contend.stress.workload import STRESS_SCOPE, StressWorkload, catalog_workload, user_workload
from contend.subject.multi_master import (
    DEFAULT_MASTERS,
    MULTI_MASTER_LOCKS,
    MULTI_MASTER_SIGNATURE,
    check_masters,
)
from contend.subject.spec import parse_spec

MAX_PROCS = 256


@dataclass
class StressOptions:
    """What to run; the CLI's options, with the same defaults."""

    #: A catalog name, or `package.module:factory` with `kind`.
    impl: str
    #: The family a user's `package.module:factory` follows (registry or lock); None: catalog.
    kind: str | None = None
    procs: int = 4
    duration: float = 5.0
    nemeses: tuple[str, ...] = ()
    interval: float = 1.0
    ttl_ms: int = 500
    hold_ms: float = 2.0
    fault_ms: int | None = None
    lag_ms: int = 100
    persistence: str = "none"
    appendfsync: str = "always"
    op_timeout: float = 1.0
    out: Path = Path("runs")
    redis_url: str | None = None
    redis_server: str | None = None
    namespace: str | None = None
    seed: int = 0
    check_timeout: float = 30.0
    html: bool = True
    #: Masters of an embedded Redis Cluster to run on (None: one server). cluster-failover gives
    #: each master a replica.
    cluster: int | None = None
    #: Redlock's independent masters (--masters N), for --only redlock or pottery_redlock (None:
    #: DEFAULT_MASTERS for those, no masters otherwise).
    masters: int | None = None

    @property
    def on_cluster(self) -> bool:
        """Does the run go to a Redis Cluster (--cluster N, or a redis+cluster:// --redis-url)?"""
        return self.cluster is not None or bool(self.redis_url and is_cluster_url(self.redis_url))


def validate(options: StressOptions) -> StressWorkload:
    """Check the options before anything starts; ContendError (exit 2) says what to change.

    A user's `package.module:factory` is imported and its signature checked here; the object it
    makes is checked once a server is up, before any worker starts (`run_stress`)."""
    user = options.kind is not None or ":" in options.impl
    spec = (
        parse_spec(
            options.impl,
            options.kind,
            STRESS_SCOPE,
            masters=options.masters,
            cluster=options.cluster,
            redis_urls=(options.redis_url,) if options.redis_url else (),
            starts_masters=True,
        )
        if user
        else None
    )
    workload = (
        user_workload(spec, options.ttl_ms)
        if spec is not None
        else catalog_workload(options.impl, options.ttl_ms)
    )
    if not 0 < options.procs <= MAX_PROCS:
        raise ContendError(f"--processes must be between 1 and {MAX_PROCS}, got {options.procs}")
    for name, value in (
        ("--duration", options.duration),
        ("--interval", options.interval),
        ("--op-timeout", options.op_timeout),
        ("--search-seconds", options.check_timeout),
    ):
        if not value > 0:
            raise ContendError(f"{name} must be > 0 seconds, got {value}")
    if options.ttl_ms < 10:
        raise ContendError(f"--ttl-ms must be at least 10, got {options.ttl_ms}")
    if options.hold_ms < 0:
        raise ContendError(f"--hold-ms must be >= 0, got {options.hold_ms}")
    if options.fault_ms is not None and options.fault_ms <= 0:
        raise ContendError(f"--fault-ms must be > 0, got {options.fault_ms}")
    if options.redis_url and options.persistence != "none":
        raise ContendError(
            "--persistence configures the embedded server; a --redis-url server keeps its own settings"
        )
    _check_cluster(options, workload)
    if workload.family == "transaction":
        _check_transaction(options)
    workload = replace(workload, masters=spec.masters if spec is not None else _lock_masters(options))
    options.nemeses = parse_nemeses(
        options.nemeses,
        redis_url=options.redis_url,
        cluster=options.on_cluster,
        masters=bool(workload.masters),
    )
    refused = unreachable(
        options.nemeses,
        duration=options.duration,
        interval=options.interval,
        lock=workload.family == "lock",
        ttl_ms=options.ttl_ms,
        fault_ms=options.fault_ms,
        lag_ms=options.lag_ms,
    )
    if refused:
        raise ContendError(refused)
    return workload


def _check_cluster(options: StressOptions, workload: StressWorkload) -> None:
    """--cluster N: a size contend builds, no --redis-url beside it, and an implementation that
    can run on a cluster."""
    check_cluster_option(options.cluster, options.redis_url)
    if options.cluster is not None and options.persistence != "none":
        raise ContendError("--persistence configures the single embedded server, not a --cluster")
    if options.on_cluster and not workload.user:
        impl = by_name(workload.name)
        if impl.single_node:
            raise ContendError(f"--only {impl.name} cannot run on a Redis Cluster: {impl.single_node}")


#: The nemeses a transaction run takes: its verdict reads one server's MONITOR stream.
TRANSACTION_NEMESES = ("client-pause", "server-pause", "server-kill")


def _check_transaction(options: StressOptions) -> None:
    """A bank runs on one server whose MONITOR stream the graph reads: no cluster, no Sentinel,
    and the nemeses that keep that server."""
    if options.on_cluster or (options.redis_url and is_sentinel_url(options.redis_url)):
        raise ContendError(
            "a transaction stress run reads one server's MONITOR stream: run it on one server "
            "(no --cluster, no redis+cluster:// or redis+sentinel:// --redis-url)"
        )
    for name in options.nemeses:
        for one in name.split(","):
            if one.strip() and one.strip() not in TRANSACTION_NEMESES:
                raise ContendError(
                    f"--nemesis {one.strip()}: a transaction run takes {', '.join(TRANSACTION_NEMESES)} "
                    "(the graph reads one server's MONITOR stream)"
                )


def _lock_masters(options: StressOptions) -> int:
    """How many masters a catalog lock spans: --masters N goes with a Redlock (--only redlock or
    pottery_redlock; DEFAULT_MASTERS without it), on embedded servers; 0 for one server. (The
    user's own lock over masters, --impl M:F --kind lock, has its masters in its spec.)"""
    redlock = options.impl in MULTI_MASTER_LOCKS
    if options.masters is None:
        return DEFAULT_MASTERS if redlock else 0
    if not redlock:
        raise ContendError(
            "--masters runs a lock over independent masters: --only "
            f"{' or --only '.join(MULTI_MASTER_LOCKS)}, or your own with --impl MODULE:FACTORY --kind lock "
            f"(called as {MULTI_MASTER_SIGNATURE})"
        )
    check_masters(
        options.masters,
        cluster=options.cluster,
        urls=(options.redis_url,) if options.redis_url else (),
        started_here=True,
    )
    return options.masters
