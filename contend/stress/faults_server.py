"""Faults on the one server of a stress run and on its workers: client-pause, server-pause,
server-kill, failover (see `contend.stress.nemesis` for what each does)."""

from __future__ import annotations

import contextlib
import signal
import time

from contend.errors import ServerError
from contend.servers.server import EmbeddedRedis
from contend.servers.signals import signal_process, wait_stopped
from contend.stress.board import Field, WorkerPhase
from contend.stress.fault import (
    DEFAULT_FAULT_MS,
    Fault,
    NemesisContext,
    millis,
)


class ClientPause(Fault):
    """SIGSTOP a worker; for a lock, one holding the lease before its write, until its lease is gone."""

    name = "client-pause"

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.worker: int | None = None
        self.others_writes = 0

    def _candidates(self) -> list[int]:
        board = self.ctx.board
        workers = range(board.procs)
        if self.ctx.lock:
            return [w for w in workers if board.get(w, Field.PHASE) == WorkerPhase.HOLDING]
        return list(workers)

    def begin(self) -> bool:
        # A lock holder dwells in WorkerPhase.HOLDING for a few ms: look for one for up to ~50 ms.
        for _ in range(50):
            candidates = self._candidates()
            if candidates and self._stop(self.ctx.pick(candidates)):
                return True
            time.sleep(0.001)
        return False

    def declined_because(self) -> str:
        if not self.ctx.lock:
            return "no worker could be stopped when a pause was due"
        board = self.ctx.board
        if sum(board.get(w, Field.WRITES) for w in range(board.procs)) == 0:
            return "no worker held the lock when a pause was due (no worker ever wrote under the lock)"
        return (
            "no worker held the lock when a pause was due (a holder waits only --hold-ms before its "
            "write; raise --hold-ms)"
        )

    def _stop(self, w: int) -> bool:
        pid = self.ctx.pids[w]
        if not signal_process(pid, signal.SIGSTOP):
            return False
        if not wait_stopped(pid) or (
            self.ctx.lock and self.ctx.board.get(w, Field.PHASE) != WorkerPhase.HOLDING
        ):
            signal_process(pid, signal.SIGCONT)  # it moved on before the signal landed
            return False
        self.worker = w
        self.since = time.monotonic_ns()
        self.others_writes = self._writes_of_others()
        process = self.ctx.board.get(w, Field.PROCESS)
        holding = f", holding the lock before its write (TTL {self.ctx.ttl_ms} ms)" if self.ctx.lock else ""
        self.record(f"start: process {process} (pid {pid}) stopped{holding}")
        return True

    def _writes_of_others(self) -> int:
        board = self.ctx.board
        return sum(board.get(w, Field.WRITES) for w in range(board.procs) if w != self.worker)

    def due(self, now: int) -> bool:
        elapsed = now - self.since
        if not self.ctx.lock:
            return elapsed >= self.min_ns()
        # Past the lease, and another worker has taken the lock and written since: resume.
        cap = max(4 * self.min_ns(), self.min_ns() + 2_000_000_000)
        return elapsed >= cap or (elapsed >= self.min_ns() and self._writes_of_others() > self.others_writes)

    def end(self) -> None:
        if self.worker is None:
            return
        pid = self.ctx.pids[self.worker]
        signal_process(pid, signal.SIGCONT)
        taken = self._writes_of_others() - self.others_writes
        process = self.ctx.board.get(self.worker, Field.PROCESS)
        meanwhile = f"; other workers wrote {taken} time(s) meanwhile" if self.ctx.lock else ""
        self.record(
            f"stop: process {process} (pid {pid}) resumed after {millis(time.monotonic_ns() - self.since)} ms"
            + meanwhile
        )
        self.worker = None

    def heal(self) -> None:
        if self.worker is not None:
            signal_process(self.ctx.pids[self.worker], signal.SIGCONT)
            self.worker = None


class ServerPause(Fault):
    """SIGSTOP the embedded server; CLIENT PAUSE a --redis-url one."""

    name = "server-pause"

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.paused: EmbeddedRedis | None = None
        self.client_pause = False

    def begin(self) -> bool:
        deployment = self.ctx.deployment
        ms = self.ctx.fault_ms or DEFAULT_FAULT_MS
        self.since = time.monotonic_ns()
        if deployment.owned:
            assert deployment.primary is not None
            deployment.primary.pause()
            wait_stopped(deployment.primary.pid or 0)
            self.paused = deployment.primary
            self.record(
                f"start: redis-server (pid {deployment.primary.pid}) stopped with SIGSTOP for {ms} ms"
            )
        else:
            client = deployment.control()
            try:
                client.execute_command("CLIENT", "PAUSE", ms)
            finally:
                client.close()
            self.client_pause = True
            self.record(f"start: CLIENT PAUSE {ms} (every client of the server waits)")
        return True

    def end(self) -> None:
        elapsed = millis(time.monotonic_ns() - self.since)
        if self.paused is not None:
            with contextlib.suppress(ServerError):
                self.paused.resume()
            self.record(f"stop: redis-server (pid {self.paused.pid}) resumed after {elapsed} ms")
            self.paused = None
        elif self.client_pause:
            self.record(f"stop: CLIENT PAUSE over after {elapsed} ms")
            self.client_pause = False

    def heal(self) -> None:
        # CLIENT PAUSE ends by itself; a stopped server needs SIGCONT.
        if self.paused is not None:
            with contextlib.suppress(ServerError):
                self.paused.resume()
            self.paused = None


class ServerKill(Fault):
    """kill -9 the embedded server, then start it again on its port and directory."""

    name = "server-kill"

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.tries = 0
        self.killed = False

    def declined_because(self) -> str:
        return "it waits a little for a worker holding the lock before a kill, and the run ended first"

    def begin(self) -> bool:
        board = self.ctx.board
        holders = [w for w in range(board.procs) if board.get(w, Field.PHASE) == WorkerPhase.HOLDING]
        if self.ctx.lock and not holders and self.tries < 50:
            self.tries += 1  # a kill while a lease is held is the interesting one: wait a little for one
            return False
        self.tries = 0
        pid = self.ctx.deployment.kill_primary()
        self.killed = True
        self.since = time.monotonic_ns()
        held = [
            board.get(w, Field.PROCESS) for w in holders if board.get(w, Field.PHASE) == WorkerPhase.HOLDING
        ]
        note = f" while process {', '.join(map(str, held))} held the lock" if held else ""
        self.record(f"start: redis-server (pid {pid}) killed with SIGKILL{note}")
        return True

    def end(self) -> None:
        deployment = self.ctx.deployment
        restarted = deployment.restart_primary()
        self.killed = False
        kept = {
            "none": "persistence off: its data is gone",
            "aof": f"AOF, appendfsync {deployment.appendfsync}: data reloaded",
            "rdb": "RDB snapshots: data as of the last save",
        }[deployment.persistence]
        self.record(
            f"stop: redis-server restarted (pid {restarted.pid}) after "
            f"{millis(time.monotonic_ns() - self.since)} ms, {kept}"
        )

    def heal(self) -> None:
        self.killed = False  # Deployment.stop cleans up; a run that is ending needs no restart


class Failover(Fault):
    """Cut replication, let the master acknowledge writes alone, kill it, promote the replica."""

    name = "failover"

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.offset = 0
        self.cut = False

    def begin(self) -> bool:
        deployment = self.ctx.deployment
        if deployment.replica is None:
            deployment.start_replica()
        assert deployment.replica is not None
        self.offset = deployment.cut_replication()
        self.cut = True
        self.since = time.monotonic_ns()
        self.record(
            f"start: replication to the replica (pid {deployment.replica.pid}) cut; "
            "the master acknowledges writes no replica has"
        )
        return True

    def due(self, now: int) -> bool:
        elapsed = now - self.since
        if elapsed < self.min_ns():
            return False
        return elapsed >= self.ctx.lag_ms * 1_000_000 + 2_000_000_000 or (
            self.ctx.deployment.master_offset() > self.offset
        )

    def end(self) -> None:
        deployment = self.ctx.deployment
        lag = millis(time.monotonic_ns() - self.since)
        lost = self.ctx.deployment.master_offset() - self.offset
        old_pid, new = deployment.promote()
        self.cut = False
        self.record(
            f"stop: master (pid {old_pid}) killed with SIGKILL {lag} ms after the cut; replica promoted "
            f"at {new.host}:{new.port}; {lost} bytes of acknowledged writes never reached it"
        )
        deployment.start_replica()

    def heal(self) -> None:
        if self.cut:
            self.ctx.deployment.heal()
            self.cut = False
