"""The sentinel-failover fault: kill -9 the master, its Sentinels promote the replica."""

from __future__ import annotations

import contextlib
import time

import redis

from contend.servers.sentinel import EmbeddedSentinelGroup
from contend.servers.server import EmbeddedRedis
from contend.stress.board import Field, WorkerPhase
from contend.stress.fault import (
    AwaitsPromotion,
    NemesisContext,
    address,
    repl_offset,
)


class SentinelFailover(AwaitsPromotion):
    """kill -9 the master; its Sentinels promote the replica; the workers follow Sentinel."""

    name = "sentinel-failover"

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.killed: EmbeddedRedis | None = None
        self.new: EmbeddedRedis | None = None
        self.master_offset = 0

    @property
    def group(self) -> EmbeddedSentinelGroup:
        assert self.ctx.deployment.group is not None, "sentinel-failover needs the Sentinel group"
        return self.ctx.deployment.group

    def declined_because(self) -> str:
        return "the replica was not in sync with the master when it was due"

    def begin(self) -> bool:
        if not self.group.replica_in_sync():
            return False
        board = self.ctx.board
        held = [
            board.get(w, Field.PROCESS)
            for w in range(board.procs)
            if board.get(w, Field.PHASE) == WorkerPhase.HOLDING
        ]
        self.master_offset = repl_offset(self.group.master(), "master_repl_offset")
        self.killed, self.new = self.group.kill_master()
        self.since = time.monotonic_ns()
        note = f" while process {', '.join(map(str, held))} held the lock" if held and self.ctx.lock else ""
        self.record(
            f"start: master {address(self.killed)} killed with SIGKILL{note}; its Sentinels are to "
            f"promote the replica {address(self.new)}"
        )
        return True

    def promoted(self) -> bool:
        assert self.new is not None
        with contextlib.suppress(redis.RedisError):
            return self.group.promoted(self.new)
        return False

    def end(self) -> None:
        if self.killed is None or self.new is None:
            return
        promoted, took = self.wait_promoted(0.02)
        self.group.restart_old_master(self.killed)
        deployment = self.ctx.deployment
        if promoted:
            deployment.primary = self.new
            deployment.note_pids()
            lag = max(0, self.master_offset - repl_offset(self.new, "master_repl_offset", before_writes=True))
            outcome = (
                f"the Sentinels promoted {address(self.new)} after {took} ms; at the kill it lacked about "
                f"{lag} bytes of the master's replication stream (acknowledged writes it never got)"
            )
        else:
            outcome = f"the Sentinels did not promote {address(self.new)} within {took} ms"
            self.missed.append(outcome)
        self.record(
            f"stop: {outcome}; the old master restarted empty (pid {self.killed.pid}) and becomes a replica"
        )
        self.killed = self.new = None

    def heal(self) -> None:
        self.killed = self.new = None  # the group stops with the run
