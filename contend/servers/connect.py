"""Connecting to a server contend did not start (--redis-url): a PING-like INFO first, and one
line that says what is wrong when it is not a Redis that answers."""

from __future__ import annotations

from urllib.parse import urlsplit

import redis
import redis.cluster

from contend.errors import TargetError
from contend.servers.cluster import URL_SCHEME as CLUSTER_SCHEME
from contend.servers.urls import is_cluster_url, mask_url, node_url


def describe_server(url: str) -> str:
    """What answers at `url` (an existing server), after an INFO; TargetError naming the URL if not."""
    masked = mask_url(url)
    if is_cluster_url(url):
        return _describe_cluster(url)
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
    except redis.RedisError as exc:  # InvalidResponse: something answers, but not in Redis's protocol
        raise not_redis(masked, exc) from None
    finally:
        client.close()
    product = "Valkey" if "valkey_version" in info else "Redis"
    version = info.get("valkey_version") or info.get("redis_version", "?")
    return f"{product} {version} at {masked}"


def not_redis(masked: str, exc: Exception) -> TargetError:
    """The one line for a server that answers, but not as Redis does (a web server's "HTTP/1.1
    400 Bad Request", say)."""
    reason = str(exc).splitlines()[0].rstrip(".") if str(exc) else type(exc).__name__
    return TargetError(
        f"what answers at {masked} is not Redis ({type(exc).__name__}: {reason}); check the port "
        "(Redis listens on 6379 by default), or drop --redis-url to use the embedded server"
    )


def _describe_cluster(url: str) -> str:
    """What answers at an existing Redis Cluster (any node's address), once the cluster says ok."""
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
    except (redis.RedisError, redis.exceptions.RedisClusterException) as exc:
        raise not_redis(masked, exc) from None
    finally:
        client.close()
    if state != "ok":
        raise TargetError(f"the Redis Cluster at {masked} reports cluster_state:{state}; wait until it is ok")
    product = "Valkey" if "valkey_version" in info else "Redis"
    version = info.get("valkey_version") or info.get("redis_version", "?")
    return f"{product} {version} cluster ({masters} masters) at {masked}"
