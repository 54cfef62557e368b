"""The board: shared memory between a stress run's parent and its worker processes.

It holds each worker's phase and counters, the start time and the stop flag,
and the URL of the server the workers talk to (it changes on a failover).
"""

from __future__ import annotations

import enum
from typing import Any


class WorkerPhase(enum.IntEnum):
    """What a worker is doing, as the parent (and the nemesis) reads it on the board."""

    STARTING = 0
    IDLE = 1
    BUSY = 2
    ACQUIRING = 3
    HOLDING = 4
    WRITING = 5
    RELEASING = 6
    DONE = 7


class Field(enum.IntEnum):
    """A worker's cells on the board."""

    PHASE = 0  # a WorkerPhase
    PROCESS = 1  # the process id it records under now (a new one after each info)
    OK = 2  # operations that ended ok
    FAIL = 3  # ... fail
    INFO = 4  # ... info
    WRITES = 5  # lock-protected writes that took effect
    READY = 6  # 1 once it waits for the start
    CUT = 7  # with --masters: a bit per lock master this worker is cut off from (partition)


class _Global(enum.IntEnum):
    """The board's cells before the workers' ones."""

    GO = 0  # the start time all workers wait for (monotonic ns); 0 before
    STOP = 1  # 1: stop now
    GENERATION = 2  # bumped each time the server address changes


URL_BYTES = 2048
_GLOBALS = len(_Global)
_FIELDS = len(Field)


class Board:
    """Shared memory between the parent and its workers: phases, counters, start/stop, the server URL."""

    def __init__(self, procs: int, cells: Any, url_cells: Any) -> None:
        self.procs = procs
        self.cells = cells
        self.url_cells = url_cells

    @classmethod
    def create(cls, ctx: Any, procs: int, url: str) -> Board:
        """A fresh board in shared memory of multiprocessing context `ctx`."""
        board = cls(procs, ctx.RawArray("q", _GLOBALS + procs * _FIELDS), ctx.RawArray("c", URL_BYTES))
        board.publish_url(url)
        return board

    def get(self, worker: int, field: Field) -> int:
        return int(self.cells[_GLOBALS + worker * _FIELDS + field])

    def set(self, worker: int, field: Field, value: int) -> None:
        self.cells[_GLOBALS + worker * _FIELDS + field] = value

    def add(self, worker: int, field: Field, amount: int = 1) -> None:
        self.cells[_GLOBALS + worker * _FIELDS + field] += amount

    def total(self, field: Field) -> int:
        return sum(self.get(w, field) for w in range(self.procs))

    @property
    def go(self) -> int:
        """The start time (monotonic ns) all workers wait for; 0 before."""
        return int(self.cells[_Global.GO])

    @go.setter
    def go(self, value: int) -> None:
        self.cells[_Global.GO] = value

    @property
    def stopped(self) -> bool:
        return bool(self.cells[_Global.STOP])

    def stop(self) -> None:
        self.cells[_Global.STOP] = 1

    @property
    def generation(self) -> int:
        """Bumped each time the server address changes (a failover)."""
        return int(self.cells[_Global.GENERATION])

    def publish_url(self, url: str) -> None:
        data = url.encode()
        if len(data) >= URL_BYTES:
            raise ValueError(f"server URL longer than {URL_BYTES - 1} bytes")
        self.url_cells.value = data
        self.cells[_Global.GENERATION] += 1

    @property
    def url(self) -> str:
        return bytes(self.url_cells.value).decode()
