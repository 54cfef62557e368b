"""Small redis-py helpers the implementations (and the harness) share."""

from __future__ import annotations

from typing import Any

import redis


def client_for_db(client: redis.Redis, db: int) -> redis.Redis:
    """A client for database `db` of the same server, with the same credentials and TLS."""
    pool = client.connection_pool
    kwargs = {**pool.connection_kwargs, "db": db}
    sizing: dict[str, Any] = {"max_connections": pool.max_connections}
    if isinstance(pool, redis.BlockingConnectionPool):
        sizing["timeout"] = pool.timeout
    return redis.Redis(connection_pool=type(pool)(connection_class=pool.connection_class, **sizing, **kwargs))


def db_of(client: redis.Redis) -> int:
    """The database a client talks to (a Redis Cluster client: 0, the only one a cluster has)."""
    pool = getattr(client, "connection_pool", None)
    if pool is None:
        return 0
    return int(pool.connection_kwargs.get("db", 0) or 0)


def glob_escape(text: str) -> str:
    """Escape the characters SCAN MATCH treats as a pattern."""
    return "".join("\\" + c if c in "*?[]\\" else c for c in text)
