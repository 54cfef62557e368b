"""Faults on an embedded Redis Cluster (--cluster N): reshard and cluster-failover."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence

import redis

from contend.servers.cluster import EmbeddedCluster
from contend.servers.server import EmbeddedRedis
from contend.stress.fault import (
    AwaitsPromotion,
    Fault,
    NemesisContext,
    address,
    millis,
    repl_offset,
)


def _describe_slot(slot: int, keys: Sequence[str]) -> str:
    shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
    return f"slot {slot} ({shown})" if keys else f"slot {slot}"


class ClusterFault(Fault):
    """A fault on an embedded Redis Cluster, at a slot that holds the run's keys."""

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.slot: int | None = None
        self.keys: list[str] = []

    @property
    def nodes(self) -> EmbeddedCluster:
        assert self.ctx.deployment.nodes is not None, "a cluster nemesis needs --cluster"
        return self.ctx.deployment.nodes

    def choose_slot(self) -> bool:
        """The next slot holding the run's keys, in turn (False: none yet)."""
        slots = self.ctx.slots()
        if not slots:
            return False
        self.slot = sorted(slots)[self.begun % len(slots)]
        self.keys = slots[self.slot]
        return True

    def declined_because(self) -> str:
        return "no slot held the run's keys yet when it was due"


class Reshard(ClusterFault):
    """Move a slot holding the run's keys to another master; ASK while it moves, MOVED after."""

    name = "reshard"

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.to: EmbeddedRedis | None = None
        self.moved = 0

    def begin(self) -> bool:
        if not self.choose_slot():
            return False
        assert self.slot is not None
        source = self.nodes.owner_of(self.slot)
        others = [m for m in self.nodes.masters_now() if m is not source]
        if not others:
            return False
        self.to = others[self.ctx.pick(range(len(others)))]
        self.since = time.monotonic_ns()
        self.moved = self.nodes.begin_move(self.slot, self.to)
        self.record(
            f"start: {_describe_slot(self.slot, self.keys)} migrating from {address(source)} to "
            f"{address(self.to)}: {self.moved} key(s) moved; the old owner answers ASK for them until it ends"
        )
        return True

    def end(self) -> None:
        if self.slot is None or self.to is None:
            return
        more = self.nodes.finish_move(self.slot, self.to)
        self.record(
            f"stop: slot {self.slot} now served by {address(self.to)} after "
            f"{millis(time.monotonic_ns() - self.since)} ms ({self.moved + more} key(s) moved in all); "
            "clients with the old slot map get MOVED"
        )
        self.slot = self.to = None

    def heal(self) -> None:
        self.slot = self.to = None  # the cluster stops with the run


class ClusterFailover(ClusterFault, AwaitsPromotion):
    """kill -9 the master of a slot holding the run's keys; the cluster promotes its replica."""

    name = "cluster-failover"

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.killed: EmbeddedRedis | None = None
        self.replica: EmbeddedRedis | None = None
        self.master_offset = 0

    def declined_because(self) -> str:
        return "no slot held the run's keys, or its master had no replica in sync, when it was due"

    def begin(self) -> bool:
        if not self.choose_slot():
            return False
        assert self.slot is not None
        master = self.nodes.owner_of(self.slot)
        replica = self.nodes.replica_of(master)
        if replica is None:
            return False
        pid = master.pid
        self.master_offset = repl_offset(master, "master_repl_offset")
        master.kill()
        self.killed, self.replica = master, replica
        self.since = time.monotonic_ns()
        self.record(
            f"start: master {address(master)} (pid {pid}) serving {_describe_slot(self.slot, self.keys)} "
            f"killed with SIGKILL; the cluster is to promote its replica {address(replica)}"
        )
        return True

    def promoted(self) -> bool:
        assert self.replica is not None
        with contextlib.suppress(redis.RedisError):
            return self.nodes.role_of(self.replica) == "master" and self.nodes.serves(self.replica, self.slot)
        return False

    def end(self) -> None:
        if self.killed is None or self.replica is None:
            return
        promoted, took = self.wait_promoted(0.05)
        self.killed.start()
        if promoted:
            lag = max(
                0, self.master_offset - repl_offset(self.replica, "master_repl_offset", before_writes=True)
            )
            outcome = (
                f"replica {address(self.replica)} promoted; it serves slot {self.slot} after {took} ms; at "
                f"the kill it lacked about {lag} bytes of the master's replication stream (acknowledged "
                "writes it never got)"
            )
        else:
            outcome = f"replica {address(self.replica)} was not promoted within {took} ms"
        if not promoted:
            self.missed.append(outcome)
        self.record(
            f"stop: {outcome}; the old master restarted (pid {self.killed.pid}) with persistence off, "
            "and rejoins as a replica"
        )
        self.killed = self.replica = None

    def heal(self) -> None:
        self.killed = self.replica = None  # the cluster stops with the run
