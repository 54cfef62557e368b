"""Where a server is, as a URL: redis://, rediss://, unix://, a Redis Cluster (redis+cluster://)
or a master found through its Sentinels (redis+sentinel://); passwords masked for display."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

import redis
import redis.sentinel

from contend.servers.cluster import URL_SCHEME as CLUSTER_SCHEME
from contend.servers.sentinel import URL_SCHEME as SENTINEL_SCHEME


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
