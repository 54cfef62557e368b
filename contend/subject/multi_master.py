"""The locks that span several independent masters (Redlock): the table of those contend can
drive, and how many masters a run may have.

Each entry builds one lock from a client of every master (`build(clients, key, ttl_ms)`), as a
stress worker does, and from a client of the first master plus the other masters' URLs
(`over_urls(others)` gives a factory of the one-server lock protocol), as the state machine does.
"""

from __future__ import annotations

import contextlib
import inspect
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import redis
import redis.asyncio

from contend.errors import ContendError

#: How many masters a run may have (an odd number: a majority of them is the quorum).
MIN_MASTERS = 3
MAX_MASTERS = 9
DEFAULT_MASTERS = 5


@dataclass(frozen=True)
class MultiMasterLock:
    """A Redlock implementation a stress run can drive over the masters' clients."""

    name: str
    description: str
    #: Builds one lock object: (the worker's clients of the masters, key, ttl_ms).
    build: Callable[[Sequence[redis.Redis], str, int], Any]
    #: A factory (client of the first master, key, ttl_ms) over the other masters at these URLs.
    over_urls: Callable[[Sequence[str]], Callable[[redis.Redis, str, int], Any]]


def _contend(masters: Sequence[redis.Redis], key: str, ttl_ms: int) -> Any:
    from contend.impl.locks.redlock import Redlock

    return Redlock(masters, key, ttl_ms)


def _contend_over(others: Sequence[str]) -> Callable[[redis.Redis, str, int], Any]:
    from contend.impl.locks.redlock import factory_over

    return factory_over(others)


def _pottery_over(others: Sequence[str]) -> Callable[[redis.Redis, str, int], Any]:
    from contend.adapters.pottery import over_masters

    return over_masters(others)


def _pottery(masters: Sequence[redis.Redis], key: str, ttl_ms: int) -> Any:
    try:
        from contend.adapters.pottery import Master, PotteryRedlock
    except ImportError:
        raise ContendError("--only pottery_redlock needs pottery: pip install 'contend[libs]'") from None
    ranked: set[redis.Redis] = {
        Master(rank, connection_pool=m.connection_pool) for rank, m in enumerate(masters)
    }
    return PotteryRedlock(ranked, key, ttl_ms)


MULTI_MASTER_LOCKS: dict[str, MultiMasterLock] = {
    lock.name: lock
    for lock in (
        MultiMasterLock(
            "redlock", "contend's Redlock as published (impl/locks/redlock.py)", _contend, _contend_over
        ),
        MultiMasterLock(
            "pottery_redlock", "pottery's Redlock, through the scoreboard's adapter", _pottery, _pottery_over
        ),
    )
}


def check_masters(
    masters: int,
    *,
    kind: str | None = None,
    cluster: int | None = None,
    urls: Sequence[str] = (),
    started_here: bool = False,
) -> None:
    """--masters N, the one validation of it that every command and `contend.testing` share: an
    odd count from MIN_MASTERS to MAX_MASTERS, a lock (`kind`, when the code is the user's), not
    with --cluster, and --redis-url given none or N times (none at all when `started_here`: the
    run pauses and restarts the masters, which contend does only to servers it started).
    ContendError says what to change."""
    if not isinstance(masters, int) or not MIN_MASTERS <= masters <= MAX_MASTERS or masters % 2 == 0:
        raise ContendError(
            f"--masters {masters}: Redlock needs an odd number of masters from {MIN_MASTERS} to "
            f"{MAX_MASTERS} (a majority of them is the quorum)"
        )
    if cluster is not None:
        raise ContendError(
            "--masters runs on independent masters, --cluster on one Redis Cluster: choose one"
        )
    if kind is not None and kind != "lock":
        raise ContendError(f"--masters spans a lock over independent masters; --kind {kind} is not a lock")
    if urls and started_here:
        raise ContendError(
            "--masters starts its own independent masters: drop --redis-url (contend restarts and pauses "
            "only servers it started)"
        )
    if urls and len(urls) != masters:
        raise ContendError(
            f"--masters {masters} with --redis-url given {len(urls)} time(s): give it once per master, "
            f"or leave it out and contend starts {masters} embedded masters"
        )


#: How contend calls a lock factory that spans independent masters (--masters N).
MULTI_MASTER_SIGNATURE = "factory(clients: list[redis.Redis], key: str, ttl_ms: int)"


def takes_one_client(factory: Callable[..., Any]) -> bool:
    """Does the factory say (by its first parameter's annotation) that it takes one client, not a
    list? Unannotated factories are found out on the server, by what they do with the list."""
    try:
        first = next(iter(inspect.signature(factory).parameters.values()), None)
    except (TypeError, ValueError):
        return False
    if first is None or first.annotation is inspect.Parameter.empty:
        return False
    text = first.annotation if isinstance(first.annotation, str) else repr(first.annotation)
    return "Redis" in text and not any(
        word in text for word in ("list", "List", "Sequence", "tuple", "Iterable")
    )


def over_masters(factory: Callable[..., Any], others: Sequence[str]) -> Callable[..., Any]:
    """The one-server lock protocol (`f(client, key, ttl_ms)`) for a lock that spans masters: `f`
    calls `factory([client, *clients of the others], key, ttl_ms)`. Each client of the first
    master gets its clients of the others once (as a process of a real deployment has them), with
    the same retry and timeout settings, counted by the same round-trip tap; a redis.asyncio
    client gets redis.asyncio clients. The checks and state machines run it as any lock."""
    urls = list(others)
    clients_of: weakref.WeakKeyDictionary[Any, list[Any]] = weakref.WeakKeyDictionary()

    def over(client: Any, key: str, ttl_ms: int, **kwargs: Any) -> Any:
        extra = clients_of.get(client)
        if extra is None:
            extra = [_like(client, url) for url in urls]
            clients_of[client] = extra
        return factory([client, *extra], key, ttl_ms, **kwargs)

    over.__name__ = getattr(factory, "__name__", "factory")
    over.__qualname__ = getattr(factory, "__qualname__", over.__name__)
    over.__module__ = getattr(factory, "__module__", __name__)
    resolution = getattr(factory, "ttl_resolution_ms", None)
    if resolution is not None:
        over.ttl_resolution_ms = resolution  # type: ignore[attr-defined]
    return over


#: Connection settings a client of another master shares with the client of the first.
_SHARED = ("retry", "socket_timeout", "socket_connect_timeout", "retry_on_error", "decode_responses")


def _like(client: Any, url: str) -> Any:
    """A client of the server at `url` with `client`'s settings (and its round-trip tap, if any)."""
    from contend.servers.cluster_client import pools_of
    from contend.servers.tap import tap

    pool = getattr(client, "connection_pool", None)
    settings = {k: v for k, v in (getattr(pool, "connection_kwargs", {}) or {}).items() if k in _SHARED}
    if isinstance(client, redis.asyncio.Redis):
        return redis.asyncio.Redis.from_url(url, **settings)
    made = redis.Redis.from_url(url, **settings)
    pools = pools_of(client)
    trips = getattr(pools[0], "contend_round_trips", None) if pools else None
    if trips is not None:
        tap(made, trips)
    # Connected now, as a process's clients are before it takes a lock: the handshake is no round
    # trip of an acquire (nor counted as one, nor spending its validity).
    sent = trips.sent if trips is not None else 0
    with contextlib.suppress(redis.RedisError):  # a master that is down: the lock will see it
        made.ping()
    if trips is not None:
        trips.sent = sent
    return made
