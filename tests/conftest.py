"""Shared fixtures: short names for the contend plugin's fixtures."""

from __future__ import annotations

import pytest
import redis

from contend.impl.catalog import SEED_LAYOUT_DBS
from contend.servers.keyspace import Namespace


@pytest.fixture
def client(contend_client: redis.Redis) -> redis.Redis:
    return contend_client


@pytest.fixture
def ns(contend_namespace: Namespace) -> Namespace:
    """A fresh namespace, cleaned in the seed layout's databases too."""
    for db in SEED_LAYOUT_DBS:
        contend_namespace.add_db(db)
    return contend_namespace
