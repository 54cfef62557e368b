"""The server a run talks to: an embedded one it starts, or an existing one (--redis-url).

Every command opens its servers here (`open_target`), through one `Deployment`: one embedded
server, an embedded Redis Cluster, or a --redis-url server.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import redis
import redis.asyncio
from redis.asyncio.retry import Retry as AsyncRetry
from redis.backoff import ExponentialWithJitterBackoff
from redis.retry import Retry

from contend.servers.clock import ServerClock
from contend.servers.cluster import EmbeddedCluster
from contend.servers.cluster_client import SlotCheckingAsyncCluster, SlotCheckingCluster
from contend.servers.connect import describe_server
from contend.servers.deployment import Deployment
from contend.servers.keyspace import Namespace
from contend.servers.server import EmbeddedRedis, Persistence
from contend.servers.urls import is_cluster_url, mask_url, node_url


@dataclass
class Target:
    """Where keys go; `client()` makes a new connection pool to it."""

    url: str
    description: str
    embedded: EmbeddedRedis | None = None
    #: Other servers the implementation under test also writes to (Redlock's other masters):
    #: its keys there are cleaned up with the namespace and follow the scheduler's virtual time.
    also: tuple[str, ...] = ()
    #: The embedded cluster, when contend started one (--cluster N).
    embedded_cluster: EmbeddedCluster | None = None
    #: The servers behind it, when they came through `open_target` (what faults act on).
    deployment: Deployment | None = None
    #: How many times the clients made here resend a command after a ConnectionError or
    #: TimeoutError, with redis-py's exponential backoff (`contend check --client-retries N`):
    #: 0 as from `Redis.from_url`, 10 as from `redis.Redis(host=...)` in redis-py 8.
    client_retries: int = 0
    #: The clock the servers keep (contend.servers.clock), which a scheduler on this target drives:
    #: None on servers contend did not start (--redis-url), which keep their own time.
    clock: ServerClock | None = None

    @property
    def masters(self) -> int:
        """How many independent masters it is (Redlock's: this server and `also`); 0 for one server."""
        return len(self.also) + 1 if self.also else 0

    @property
    def cluster(self) -> bool:
        """Is this a Redis Cluster (redis+cluster://)? Its clients are redis.cluster.RedisCluster."""
        return is_cluster_url(self.url)

    def client(self, *, pool_size: int | None = None, **kwargs: Any) -> redis.Redis:
        """A new client. With `pool_size`, threads share at most that many connections and
        wait for a free one (redis-py's default pool raises past 100 connections instead).
        On a cluster, a RedisCluster client (`pool_size` connections at most per node)."""
        kwargs.setdefault("socket_connect_timeout", 5)
        # No read timeout, as redis.Redis() has none (from_url would read the connect timeout as
        # one): a blocking command the code sends (BLPOP for 5 s) must not time out on contend's side.
        kwargs.setdefault("socket_timeout", None)
        if self.client_retries or self.cluster:
            # A RedisCluster resends 3 times by default: on a cluster the count is set either way.
            kwargs.setdefault(
                "retry", Retry(ExponentialWithJitterBackoff(cap=1, base=0.01), self.client_retries)
            )
        if self.cluster:
            if pool_size is not None:
                kwargs["max_connections"] = pool_size
            return SlotCheckingCluster.from_url(node_url(self.url), **kwargs)  # type: ignore[return-value]
        if pool_size is not None:
            pool = redis.BlockingConnectionPool.from_url(
                self.url, max_connections=pool_size, timeout=60, **kwargs
            )
            return redis.Redis(connection_pool=pool)
        return redis.Redis.from_url(self.url, **kwargs)

    def async_client(self, **kwargs: Any) -> redis.asyncio.Redis:
        """A new redis.asyncio client (see `async_client`)."""
        if self.client_retries or self.cluster:
            kwargs.setdefault(
                "retry", AsyncRetry(ExponentialWithJitterBackoff(cap=1, base=0.01), self.client_retries)
            )
        return async_client(self.url, **kwargs)

    @property
    def masked_url(self) -> str:
        return mask_url(self.url)

    def namespace(self, prefix: str | None = None, *, client: redis.Redis | None = None) -> Namespace:
        """A fresh run namespace; NamespaceInUse if `prefix` already holds keys."""
        ns = Namespace(client or self.client(), prefix, other_urls=self.also)
        ns.ensure_empty()
        return ns


def async_client(url: str, **kwargs: Any) -> redis.asyncio.Redis:
    """A new redis.asyncio client of the server at `url`; on a Redis Cluster (redis+cluster://), a
    redis.asyncio RedisCluster whose cross-slot refusals are noted as the sync client's are. It
    connects (and finds the cluster's nodes) on its first command, on the loop that awaits it:
    use it on that loop only, and `aclose()` it there."""
    if is_cluster_url(url):
        return SlotCheckingAsyncCluster.from_url(node_url(url), **kwargs)  # type: ignore[return-value]
    return redis.asyncio.Redis.from_url(url, **kwargs)


def connect_url(url: str) -> Target:
    """A Target for an existing server, after an INFO; TargetError naming the URL if not."""
    return Target(url, describe_server(url))


@contextlib.contextmanager
def open_target(
    redis_url: str | None = None,
    redis_server: str | None = None,
    *,
    persistence: Persistence = "none",
    cluster: int | None = None,
    client_retries: int = 0,
    masters: int = 0,
    master_urls: tuple[str, ...] = (),
    keep_clock: bool = True,
) -> Iterator[Target]:
    """The embedded server (started here, stopped on exit), an embedded cluster of `cluster`
    masters, `masters` independent embedded masters (the first is the target, the others its
    `also`), the servers at `master_urls` (as many), or the server at `redis_url`; its clients
    resend `client_retries` times. Servers it starts keep the run's clock unless `keep_clock` is
    False (a run in real time only: any redis-server that runs will do)."""
    if master_urls:
        described = [describe_server(url) for url in master_urls]
        yield Target(
            master_urls[0],
            f"{len(master_urls)} masters: " + "; ".join(described),
            also=tuple(master_urls[1:]),
            client_retries=client_retries,
        )
        return
    deployment = Deployment(
        redis_url=redis_url,
        redis_server=redis_server,
        persistence=persistence,
        cluster=cluster,
        node_timeout_ms=None,
        masters=masters,
        counter=not masters,
        keep_clock=keep_clock,
    )
    try:
        deployment.start()
        yield replace(target_of(deployment), client_retries=client_retries)
    finally:
        deployment.stop()


def target_of(deployment: Deployment) -> Target:
    """The Target a started deployment serves (its primary, cluster or --redis-url server; its
    first master, with the others as `also`, when it has independent masters and no counter)."""
    if deployment.primary is None and deployment.lock_masters:
        first, *others = deployment.lock_masters
        return Target(
            first.url,
            deployment.description,
            first,
            also=tuple(m.url for m in others),
            deployment=deployment,
            clock=deployment.clock,
        )
    return Target(
        deployment.url,
        deployment.description,
        deployment.primary,
        embedded_cluster=deployment.nodes,
        deployment=deployment,
        clock=deployment.clock,
    )
