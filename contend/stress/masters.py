"""Redlock in a stress run: the lock over N independent embedded masters (--masters N).

The lock's masters are N embedded servers without persistence, apart from the server that
holds the protected counter (which no master nemesis touches). Each worker has its own
client of every master and lists the masters starting at a different one (worker k starts
at master k mod N), as processes of a real deployment need not agree on an order: two
workers can then split a vote, and a winner may hold a bare majority.

A worker's clients of the masters fail a round trip with a ConnectionError, before sending
it, while the partition nemesis has cut that worker off from that master (a bit per master
in the worker's `Field.CUT` cell of the board).

`MULTI_MASTER_LOCKS` names the Redlock implementations a run can drive: contend's
(`impl/locks/redlock.py`, Redlock as published) and pottery's (the scoreboard's adapter).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import redis

from contend.errors import ContendError
from contend.stress.board import Board, Field

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


def _contend(masters: Sequence[redis.Redis], key: str, ttl_ms: int) -> Any:
    from contend.impl.locks.redlock import Redlock

    return Redlock(masters, key, ttl_ms)


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
        MultiMasterLock("redlock", "contend's Redlock as published (impl/locks/redlock.py)", _contend),
        MultiMasterLock("pottery_redlock", "pottery's Redlock, through the scoreboard's adapter", _pottery),
    )
}


def check_masters(masters: int) -> None:
    """ContendError for a number of masters a run will not start."""
    if not isinstance(masters, int) or not MIN_MASTERS <= masters <= MAX_MASTERS or masters % 2 == 0:
        raise ContendError(
            f"--masters {masters}: Redlock needs an odd number of masters from {MIN_MASTERS} to "
            f"{MAX_MASTERS} (a majority of them is the quorum)"
        )


def cut_mask(masters: Sequence[int]) -> int:
    """The `Field.CUT` value for a worker cut off from the masters at these indexes."""
    mask = 0
    for k in masters:
        mask |= 1 << k
    return mask


def cut_indexes(mask: int, masters: int) -> list[int]:
    """The master indexes a `Field.CUT` value cuts off."""
    return [k for k in range(masters) if mask >> k & 1]


def master_clients(
    urls: Sequence[str], board: Board, worker: int, connect: Callable[[str], redis.Redis]
) -> list[redis.Redis]:
    """A worker's clients of the masters, in its own order (starting at master `worker` mod N),
    each failing its round trips while the board says the worker is cut off from it."""
    clients = []
    for k, url in enumerate(urls):
        client = connect(url)
        pool = client.connection_pool
        pool.connection_class = _cuttable(pool.connection_class, board, worker, k)
        clients.append(client)
    start = worker % len(clients)
    return clients[start:] + clients[:start]


def _cuttable(base: Any, board: Board, worker: int, master: int) -> type:
    def send_packed_command(self: Any, command: Any, check_health: bool = True) -> None:
        if board.get(worker, Field.CUT) >> master & 1:
            self.disconnect()
            raise redis.ConnectionError(f"cut off from master {master} by the partition nemesis")
        base.send_packed_command(self, command, check_health)

    return type(f"Cuttable{base.__name__}", (base,), {"send_packed_command": send_packed_command})
