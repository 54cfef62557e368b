"""The scheduled machines' connections: connected clients kept from one example to the next
(a connect costs more than a whole step), a redis.asyncio client per scheduled async client, and
the harness's synchronous view of async code."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

import redis

from contend.servers.target import Target

#: Connected clients left by finished examples, per server URL and client settings: an example
#: takes them instead of connecting anew (a connect costs more than a whole step).
_idle_connections: dict[tuple[str, int], list[redis.Redis]] = {}


def _pool_key(target: Target) -> tuple[str, int]:
    return target.url, target.client_retries


def take_connection(target: Target) -> redis.Redis:
    """A connected client for `target`: one a finished example gave back, or a new one."""
    idle = _idle_connections.setdefault(_pool_key(target), [])
    if idle:
        return idle.pop()
    conn = target.client()
    conn.ping()  # connect before the run: the handshake is no step
    return conn


def give_back(target: Target, conn: redis.Redis) -> None:
    """A finished example's connected client, for the next example to take."""
    _idle_connections.setdefault(_pool_key(target), []).append(conn)


def forget_connections(target: Target) -> None:
    """Close the connections finished examples left for `target` (a server they talked to was
    restarted): the next example connects anew."""
    for conn in _idle_connections.pop(_pool_key(target), []):
        with contextlib.suppress(Exception):
            conn.close()


def async_connection(target: Target) -> Any:
    """A redis.asyncio client for one scheduled client (a cluster client on a Redis Cluster): it
    connects on its first command, on that client's loop (the handshake, and a cluster client's
    discovery of the nodes, are no step), and is closed when the scheduler closes."""
    options = dict(ASYNC_CLIENT_OPTIONS)
    try:  # redis-py 7+: no maintenance notifications to set up on each new connection (a round trip)
        from redis.maint_notifications import MaintNotificationsConfig

        options["maint_notifications_config"] = MaintNotificationsConfig(enabled=False)
    except ImportError:
        pass
    return target.async_client(**options)


#: A scheduled async client's options (every example makes its clients anew, on new loops).
ASYNC_CLIENT_OPTIONS: dict[str, Any] = {}


class SyncView:
    """Calls an async implementation's methods synchronously, outside the scheduler (the
    controller thread is no client: nothing is gated, nothing is virtual), each run to its end
    on a loop and client of the view's own, made on its first call and kept until `_close()` (a
    cluster client finds out the cluster's nodes once, not at every call)."""

    def __init__(self, make: Callable[[Any], Any], target: Target) -> None:
        self._make = make
        self._target = target
        self._loop: asyncio.AbstractEventLoop | None = None
        self._client: Any = None

    def __getattr__(self, name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                self._client = self._target.async_client()
            return self._loop.run_until_complete(getattr(self._make(self._client), name)(*args, **kwargs))

        return call

    def _close(self) -> None:
        loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            loop.run_until_complete(self._client.aclose())
        finally:
            loop.close()
