"""Redlock in a stress run: the lock over N independent embedded masters (--masters N).

The lock's masters are N embedded servers without persistence, apart from the server that
holds the protected counter (which no master nemesis touches). Each worker has its own
client of every master and lists the masters starting at a different one (worker k starts
at master k mod N), as processes of a real deployment need not agree on an order: two
workers can then split a vote, and a winner may hold a bare majority.

A worker's clients of the masters fail a round trip with a ConnectionError, before sending
it, while the partition nemesis has cut that worker off from that master (a bit per master
in the worker's `Field.CUT` cell of the board).

The Redlock implementations a run can drive are listed in `contend.subject.multi_master`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import redis

from contend.stress.board import Board, Field


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
