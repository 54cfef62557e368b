"""pytest fixtures for testing Redis primitives on a real server (entry point `contend`).

* `contend_target` (session): one embedded redis-server per pytest process, so
  one per pytest-xdist worker; or the server of `--contend-redis-url`.
* `contend_client`: a redis-py client for it, closed after the test.
* `contend_namespace`: a fresh key namespace, deleted (SCAN + UNLINK) after the test.
* `contend_private_server`: a server of the test's own, for tests that pause,
  kill or restart it; stopped after the test.
* `contend_scheduler`: a controlled scheduler (`contend.schedule.Scheduler`):
  add clients with a connection each, start operations, and choose who makes
  the next round trip; closed (its client threads stopped, redis-py and time
  unpatched) after the test.

It also registers the Hypothesis profiles `contend-ci` (derandomized, bounded),
`contend-dev` and `contend-thorough` (contend.machines.settings), without loading
any: a suite opts in with `--hypothesis-profile contend-ci`. Checking your own
implementation from a test: `contend.testing`.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from contend.schedule.scheduler import Scheduler
from contend.servers.keyspace import Namespace
from contend.servers.server import EmbeddedRedis
from contend.servers.target import Target, open_target


def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Register contend's Hypothesis profiles before conftest.py files (which may load one) and
    before Hypothesis reads `--hypothesis-profile`."""
    from contend.machines.settings import register_profiles  # imports Hypothesis: not at plugin load

    register_profiles()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("contend", "contend: Redis servers for tests")
    group.addoption(
        "--contend-redis-url",
        metavar="URL",
        help="run contend fixtures against this server instead of an embedded one "
        "(keys stay in per-test namespaces; nothing else is touched)",
    )
    group.addoption(
        "--contend-redis-server",
        metavar="PATH",
        help="redis-server binary for the embedded server",
    )


@pytest.fixture(scope="session")
def contend_target(request: pytest.FixtureRequest) -> Iterator[Target]:
    """The server this pytest process (this xdist worker) uses."""
    with open_target(
        request.config.getoption("--contend-redis-url"),
        request.config.getoption("--contend-redis-server"),
    ) as target:
        yield target


@pytest.fixture
def contend_client(contend_target: Target) -> Iterator[redis.Redis]:
    client = contend_target.client()
    yield client
    client.close()


@pytest.fixture
def contend_namespace(contend_target: Target) -> Iterator[Namespace]:
    """A fresh namespace; add databases with `ns.add_db(n)` to have them cleaned too."""
    client = contend_target.client()
    ns = contend_target.namespace(client=client)
    yield ns
    ns.cleanup()
    client.close()


@pytest.fixture
def contend_private_server() -> Iterator[EmbeddedRedis]:
    """An embedded server for this test alone."""
    with EmbeddedRedis() as server:
        yield server


@pytest.fixture
def contend_scheduler(contend_target: Target) -> Iterator[Scheduler]:
    """A controlled scheduler for this test, driving the clock of contend_target's server (an
    embedded one keeps the scheduler's virtual time); give each client a connection of its own."""
    with Scheduler(clock=contend_target.clock) as scheduler:
        yield scheduler
