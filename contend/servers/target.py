"""The server a run talks to: an embedded one it starts, or an existing one (--redis-url)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.asyncio
import redis.cluster
import redis.sentinel

from contend.errors import TargetError
from contend.servers.binary import find_redis_server
from contend.servers.cluster import URL_SCHEME as CLUSTER_SCHEME
from contend.servers.cluster import EmbeddedCluster
from contend.servers.cluster_client import SlotCheckingAsyncCluster, SlotCheckingCluster
from contend.servers.keyspace import Namespace
from contend.servers.sentinel import URL_SCHEME as SENTINEL_SCHEME
from contend.servers.server import EmbeddedRedis, Persistence


def mask_url(url: str) -> str:
    """The URL with its password replaced by ****."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<unparseable URL>"
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit(parts._replace(netloc=f"{user}:****@{host}"))


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

    @property
    def cluster(self) -> bool:
        """Is this a Redis Cluster (redis+cluster://)? Its clients are redis.cluster.RedisCluster."""
        return is_cluster_url(self.url)

    def client(self, *, pool_size: int | None = None, **kwargs: Any) -> redis.Redis:
        """A new client. With `pool_size`, threads share at most that many connections and
        wait for a free one (redis-py's default pool raises past 100 connections instead).
        On a cluster, a RedisCluster client (`pool_size` connections at most per node)."""
        kwargs.setdefault("socket_connect_timeout", 5)
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


def is_cluster_url(url: str) -> bool:
    """Does `url` name a Redis Cluster (redis+cluster://)?"""
    return url.startswith(CLUSTER_SCHEME + "://")


def is_sentinel_url(url: str) -> bool:
    """Does `url` name a master through its Sentinels (redis+sentinel://HOST:PORT,.../NAME)?"""
    return url.startswith(SENTINEL_SCHEME + "://")


def sentinel_master(url: str, **kwargs: Any) -> redis.Redis:
    """A client of the master a redis+sentinel:// URL names, found (and found again after a
    failover) through its Sentinels; `kwargs` configure the master's connections."""
    rest = url.split("://", 1)[1]
    hosts, _, name = rest.partition("/")
    sentinels = [(h.rsplit(":", 1)[0], int(h.rsplit(":", 1)[1])) for h in hosts.split(",") if h]
    timeout = kwargs.get("socket_connect_timeout", 2)
    watch = redis.sentinel.Sentinel(sentinels, socket_timeout=timeout, socket_connect_timeout=timeout)
    return watch.master_for(name or "mymaster", **kwargs)


def node_url(url: str) -> str:
    """The redis:// URL of the node a redis+cluster:// URL names (where a cluster client starts)."""
    return "redis://" + url.split("://", 1)[1] if is_cluster_url(url) else url


def connect_url(url: str) -> Target:
    """A Target for an existing server, after a PING; TargetError naming the URL if not."""
    masked = mask_url(url)
    if is_cluster_url(url):
        return connect_cluster_url(url)
    if not url.startswith(("redis://", "rediss://", "unix://")):
        raise TargetError(
            f"--redis-url {masked}: expected redis://[[user]:password@]host[:port][/db], "
            f"rediss:// for TLS, unix:///path, or {CLUSTER_SCHEME}://host:port for a Redis Cluster"
        )
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=3, socket_timeout=5)
    except ValueError as exc:
        raise TargetError(f"--redis-url {masked}: {exc}") from None
    try:
        info = client.info("server")
    except redis.AuthenticationError as exc:
        raise TargetError(f"Redis at {masked} refused the credentials: {exc}") from None
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        reason = str(exc).splitlines()[0].rstrip(".") if str(exc) else type(exc).__name__
        raise TargetError(
            f"cannot reach Redis at {masked}: {reason}; check host, port and password, "
            "or drop --redis-url to use the embedded server"
        ) from None
    except redis.ResponseError as exc:
        raise TargetError(f"Redis at {masked} answered INFO with an error: {exc}") from None
    finally:
        client.close()
    product = "Valkey" if "valkey_version" in info else "Redis"
    version = info.get("valkey_version") or info.get("redis_version", "?")
    return Target(url, f"{product} {version} at {masked}")


def connect_cluster_url(url: str) -> Target:
    """A Target for an existing Redis Cluster (any node's address), once the cluster says ok."""
    masked = mask_url(url)
    parts = urlsplit(node_url(url))
    if parts.path not in ("", "/", "/0"):
        raise TargetError(f"--redis-url {masked}: a cluster has database 0 only; drop {parts.path!r}")
    try:
        client = redis.cluster.RedisCluster.from_url(
            node_url(url), socket_connect_timeout=3, socket_timeout=5
        )
    except (redis.RedisError, redis.exceptions.RedisClusterException, OSError, ValueError) as exc:
        reason = str(exc).splitlines()[0].rstrip(".") if str(exc) else type(exc).__name__
        raise TargetError(
            f"cannot reach a Redis Cluster at {masked}: {reason}; check the node's host and port "
            f"(a node of a cluster, with cluster-enabled yes), or use redis:// for a single server"
        ) from None
    try:
        state = client.cluster_info().get("cluster_state")
        info = client.info("server", target_nodes=redis.cluster.RedisCluster.RANDOM)
        masters = len(client.get_primaries())
    finally:
        client.close()
    if state != "ok":
        raise TargetError(f"the Redis Cluster at {masked} reports cluster_state:{state}; wait until it is ok")
    product = "Valkey" if "valkey_version" in info else "Redis"
    version = info.get("valkey_version") or info.get("redis_version", "?")
    return Target(url, f"{product} {version} cluster ({masters} masters) at {masked}")


@contextlib.contextmanager
def open_target(
    redis_url: str | None = None,
    redis_server: str | None = None,
    *,
    persistence: Persistence = "none",
    cluster: int | None = None,
) -> Iterator[Target]:
    """The embedded server (started here, stopped on exit), an embedded cluster of `cluster`
    masters, or the server at `redis_url`."""
    if redis_url:
        yield connect_url(redis_url)
        return
    if cluster is not None:
        with EmbeddedCluster(cluster, binary=find_redis_server(redis_server)) as nodes:
            description = f"{nodes.describe()} ({nodes.binary.source}), joined in {nodes.joined_in:.1f} s"
            yield Target(nodes.url, description, embedded_cluster=nodes)
        return
    with EmbeddedRedis(find_redis_server(redis_server), persistence=persistence) as server:
        yield Target(server.url, server.describe() + f" ({server.binary.source})", server)
