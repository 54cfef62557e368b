"""Helpers the registry tests share: build a catalog registry, read its counter."""

from __future__ import annotations

from typing import Any

import redis

from contend.impl.catalog import Implementation
from contend.impl.registry import Registerer
from contend.servers.keyspace import Namespace


def build(impl: Implementation, client: redis.Redis, ns: Namespace) -> Any:
    return impl.factory(client, ns.prefix)


def counter_value(reg: Any) -> int:
    """The highest id handed out, read straight from Redis."""
    if isinstance(reg, Registerer):
        raw = reg.redis_cnt.get(reg.prefix + reg.counter_key)
    else:
        raw = reg.client.get(reg.keys.counter)
    return int(raw or 0)
