"""The locks that span several independent masters (Redlock): the table of those contend can
drive, and how many masters a run may have.

Each entry builds one lock from a client of every master (`build(clients, key, ttl_ms)`), as a
stress worker does, and from a client of the first master plus the other masters' URLs
(`over_urls(others)` gives a factory of the one-server lock protocol), as the state machine does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import redis

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


def check_masters(masters: int) -> None:
    """ContendError for a number of masters a run will not start."""
    if not isinstance(masters, int) or not MIN_MASTERS <= masters <= MAX_MASTERS or masters % 2 == 0:
        raise ContendError(
            f"--masters {masters}: Redlock needs an odd number of masters from {MIN_MASTERS} to "
            f"{MAX_MASTERS} (a majority of them is the quorum)"
        )
