"""The board: shared memory between a stress run's parent and its worker processes.

It holds each worker's phase and counters, the start time and the stop flag,
and the URL of the server the workers talk to (it changes on a failover).
"""

from __future__ import annotations

from typing import Any

# Worker phases, as the parent reads them on the board.
STARTING, IDLE, BUSY, ACQUIRING, HOLDING, WRITING, RELEASING, DONE = range(8)
PHASE_NAMES = ("starting", "idle", "busy", "acquiring", "holding", "writing", "releasing", "done")

# Per-worker cells, then the global ones.
PHASE, PROCESS, OK, FAIL, INFO, WRITES, READY = range(7)
FIELDS = 7
GO, STOP, GENERATION = range(3)
GLOBALS = 3
URL_BYTES = 2048


class Board:
    """Shared memory between the parent and its workers: phases, counters, start/stop, the server URL."""

    def __init__(self, procs: int, cells: Any, url_cells: Any) -> None:
        self.procs = procs
        self.cells = cells
        self.url_cells = url_cells

    @classmethod
    def create(cls, ctx: Any, procs: int, url: str) -> Board:
        """A fresh board in shared memory of multiprocessing context `ctx`."""
        board = cls(procs, ctx.RawArray("q", GLOBALS + procs * FIELDS), ctx.RawArray("c", URL_BYTES))
        board.publish_url(url)
        return board

    def get(self, worker: int, field: int) -> int:
        return int(self.cells[GLOBALS + worker * FIELDS + field])

    def set(self, worker: int, field: int, value: int) -> None:
        self.cells[GLOBALS + worker * FIELDS + field] = value

    def add(self, worker: int, field: int, amount: int = 1) -> None:
        self.cells[GLOBALS + worker * FIELDS + field] += amount

    def total(self, field: int) -> int:
        return sum(self.get(w, field) for w in range(self.procs))

    @property
    def go(self) -> int:
        """The start time (monotonic ns) all workers wait for; 0 before."""
        return int(self.cells[GO])

    @go.setter
    def go(self, value: int) -> None:
        self.cells[GO] = value

    @property
    def stopped(self) -> bool:
        return bool(self.cells[STOP])

    def stop(self) -> None:
        self.cells[STOP] = 1

    @property
    def generation(self) -> int:
        """Bumped each time the server address changes (a failover)."""
        return int(self.cells[GENERATION])

    def publish_url(self, url: str) -> None:
        data = url.encode()
        if len(data) >= URL_BYTES:
            raise ValueError(f"server URL longer than {URL_BYTES - 1} bytes")
        self.url_cells.value = data
        self.cells[GENERATION] += 1

    @property
    def url(self) -> str:
        return bytes(self.url_cells.value).decode()
