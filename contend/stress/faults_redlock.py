"""Faults on Redlock's independent masters (--masters N): master-pause, master-restart, partition."""

from __future__ import annotations

import contextlib
import time

import redis

from contend.errors import ServerError
from contend.servers.server import EmbeddedRedis
from contend.servers.signals import wait_stopped
from contend.stress.board import Field, WorkerPhase
from contend.stress.fault import (
    DEFAULT_FAULT_MS,
    Fault,
    NemesisContext,
    address,
    millis,
)
from contend.stress.masters import cut_mask


class MasterFault(Fault):
    """A fault on one of Redlock's masters (--masters N), taken in turn."""

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.master: int | None = None

    @property
    def masters(self) -> list[EmbeddedRedis]:
        return self.ctx.deployment.lock_masters

    def describe(self, k: int) -> str:
        server = self.masters[k]
        return f"lock master {k} ({address(server)}, pid {server.pid})"


class MasterPause(MasterFault):
    """SIGSTOP one of the lock's masters, SIGCONT it later."""

    name = "master-pause"

    def begin(self) -> bool:
        k = self.begun % len(self.masters)
        server = self.masters[k]
        server.pause()
        wait_stopped(server.pid or 0)
        self.master = k
        self.since = time.monotonic_ns()
        self.record(
            f"start: {self.describe(k)} stopped with SIGSTOP for {self.ctx.fault_ms or DEFAULT_FAULT_MS} ms"
        )
        return True

    def end(self) -> None:
        if self.master is None:
            return
        with contextlib.suppress(ServerError):
            self.masters[self.master].resume()
        self.record(
            f"stop: {self.describe(self.master)} resumed after {millis(time.monotonic_ns() - self.since)} ms"
        )
        self.master = None

    def heal(self) -> None:
        if self.master is not None:
            with contextlib.suppress(ServerError):
                self.masters[self.master].resume()
            self.master = None


class MasterRestart(MasterFault):
    """kill -9 one of the lock's masters (one under a bare-majority lease, if it comes), restart it empty."""

    name = "master-restart"
    #: Turns it waits for a lease on a bare majority before it takes any master.
    PATIENCE = 100

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.tries = 0
        self.clients: list[redis.Redis] = []

    def declined_because(self) -> str:
        return "it waits a little for a lease on a bare majority of the masters, and the run ended first"

    def _leases(self) -> dict[bytes | str, list[int]]:
        """Each token on the lock key now, with the masters holding it. It is asked at every
        tick while a worker holds the lock: one client per master serves the whole run (it
        reconnects by itself to a master that restarted)."""
        if not self.clients:
            self.clients = [server.client(socket_timeout=0.2) for server in self.masters]
        held: dict[bytes | str, list[int]] = {}
        for k, client in enumerate(self.clients):
            with contextlib.suppress(redis.RedisError):
                token = client.get(self.ctx.lock_key or "")
                if token is not None:
                    held.setdefault(token, []).append(k)
        return held

    def begin(self) -> bool:
        quorum = len(self.masters) // 2 + 1
        board = self.ctx.board
        holding = any(board.get(w, Field.PHASE) == WorkerPhase.HOLDING for w in range(board.procs))
        # A token on a bare majority while a worker holds the lock (not an acquire half-way through).
        bare = [ks for ks in self._leases().values() if len(ks) == quorum] if holding else []
        if not bare and self.tries < self.PATIENCE:
            self.tries += 1
            time.sleep(0.002)
            return False
        self.tries = 0
        k = self.ctx.pick(bare[0]) if bare else self.begun % len(self.masters)
        what = self.describe(k)
        self.masters[k].kill()
        self.master = k
        self.since = time.monotonic_ns()
        note = (
            f" while a lease was on it and on {quorum - 1} other master(s) only: a bare majority of "
            f"{len(self.masters)}"
            if bare
            else ""
        )
        self.record(f"start: {what} killed with SIGKILL{note}")
        return True

    def end(self) -> None:
        if self.master is None:
            return
        server = self.masters[self.master]
        server.start()
        self.ctx.deployment.note_pids()
        self.record(
            f"stop: {self.describe(self.master)} restarted after {millis(time.monotonic_ns() - self.since)} ms, "
            "empty (persistence off): the leases it held are gone"
        )
        self.master = None

    def heal(self) -> None:
        self.master = None  # the masters stop with the run
        for client in self.clients:
            client.close()
        self.clients = []


class Partition(MasterFault):
    """Cut one worker off from a minority of the lock's masters."""

    name = "partition"

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.worker: int | None = None

    def begin(self) -> bool:
        board, n = self.ctx.board, len(self.masters)
        w = self.begun % board.procs
        first = self.begun % n
        cut = [(first + i) % n for i in range(n // 2)]
        board.set(w, Field.CUT, cut_mask(cut))
        self.worker = w
        self.since = time.monotonic_ns()
        process = board.get(w, Field.PROCESS)
        self.record(
            f"start: process {process} cut off from lock master(s) {', '.join(map(str, cut))} "
            f"(a minority of {n}) for {self.ctx.fault_ms or DEFAULT_FAULT_MS} ms"
        )
        return True

    def end(self) -> None:
        if self.worker is None:
            return
        self.ctx.board.set(self.worker, Field.CUT, 0)
        process = self.ctx.board.get(self.worker, Field.PROCESS)
        self.record(
            f"stop: process {process} reaches every master again after {millis(time.monotonic_ns() - self.since)} ms"
        )
        self.worker = None

    def heal(self) -> None:
        for w in range(self.ctx.board.procs):
            self.ctx.board.set(w, Field.CUT, 0)
        self.worker = None
