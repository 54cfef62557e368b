"""The fault base of a stress run's nemesis: what a fault acts on, how long it lasts at least,
and the begin / due / end / heal cycle every fault follows (`contend.stress.nemesis` runs them)."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

from contend.servers.deployment import Deployment
from contend.servers.server import EmbeddedRedis
from contend.stress.board import Board

#: Default length of a server pause, of a client pause outside locks, and the failover's lag (ms).
DEFAULT_FAULT_MS = 500
DEFAULT_LAG_MS = 100
#: A cluster or Sentinel failover lasts at least this long (ms): the cluster fails a master after
#: its cluster-node-timeout (`Deployment`'s 1000 ms), then its replica waits 500 ms or more to be
#: elected; Sentinels agree after down-after-milliseconds (500), then elect a leader that promotes.
CLUSTER_FAILOVER_MS = 1500
#: The longest a cluster or Sentinel failover is waited for before the fault ends anyway (ms).
CLUSTER_FAILOVER_CAP_MS = 20_000


@dataclass
class NemesisContext:
    """What faults act on: the servers, the workers (OS pids by index) and their board."""

    deployment: Deployment
    board: Board
    pids: Sequence[int]
    record: Callable[[str, str], None]
    lock: bool = False
    ttl_ms: int = 500
    fault_ms: int | None = None
    lag_ms: int = DEFAULT_LAG_MS
    rng: random.Random | None = None
    #: The lock workload's key (Redlock's key on each of its masters).
    lock_key: str | None = None
    #: On a cluster: the slots holding the run's keys now, each with those keys.
    slots: Callable[[], dict[int, list[str]]] = lambda: {}

    def pick(self, options: Sequence[int]) -> int:
        return (self.rng or random).choice(list(options))


def millis(ns: int) -> int:
    return round(ns / 1e6)


def least_ms(name: str, *, lock: bool, ttl_ms: int, fault_ms: int | None, lag_ms: int) -> int:
    """How long one fault of nemesis `name` lasts at least, in ms: a fault that would not fit in
    what is left of the run is not begun."""
    if name == "client-pause":
        if fault_ms is not None:
            return fault_ms
        return max(ttl_ms * 3 // 2, ttl_ms + 50) if lock else DEFAULT_FAULT_MS
    if name in ("server-kill", "master-restart"):
        return fault_ms or 50
    if name == "failover":
        return lag_ms
    if name in ("cluster-failover", "sentinel-failover"):
        return CLUSTER_FAILOVER_MS
    return fault_ms or DEFAULT_FAULT_MS


class Fault:
    """One kind of fault: `begin` it (False: not now, try again), `due` says when to `end` (heal) it."""

    name: ClassVar[str] = ""

    def __init__(self, ctx: NemesisContext) -> None:
        self.ctx = ctx
        self.since = 0
        #: Faults begun; turns it was due but did not fit in the run; turns `begin` said not now.
        self.begun = 0
        self.unfit = 0
        self.declined = 0
        #: Why each fault begun did not take effect (a replica never promoted, say): a fault
        #: that never took effect counts as none injected.
        self.missed: list[str] = []

    def begin(self) -> bool:
        raise NotImplementedError

    def declined_because(self) -> str:
        """Why `begin` said not now, in words (for a run in which this fault never happened)."""
        return "it was never the right moment"

    def min_ns(self) -> int:
        """How long the fault lasts at least (one that would not fit in the run is not begun)."""
        c = self.ctx
        return (
            least_ms(self.name, lock=c.lock, ttl_ms=c.ttl_ms, fault_ms=c.fault_ms, lag_ms=c.lag_ms)
            * 1_000_000
        )

    def due(self, now: int) -> bool:
        return now - self.since >= self.min_ns()

    def end(self) -> None:
        raise NotImplementedError

    def heal(self) -> None:
        """Undo whatever is still in effect, without recording (Ctrl-C, errors)."""

    def record(self, text: str) -> None:
        self.ctx.record(self.name, text)


class AwaitsPromotion(Fault):
    """A fault that kills a master and ends once a replica has been promoted in its place (by the
    cluster or by Sentinels), or after CLUSTER_FAILOVER_CAP_MS."""

    def promoted(self) -> bool:
        """Has the replica taken over? (False while it cannot tell.)"""
        raise NotImplementedError

    def due(self, now: int) -> bool:
        elapsed = now - self.since
        if elapsed < self.min_ns():
            return False
        return elapsed >= CLUSTER_FAILOVER_CAP_MS * 1_000_000 or self.promoted()

    def wait_promoted(self, poll: float) -> tuple[bool, int]:
        """Wait (up to the cap) for the promotion: (promoted, ms since the kill)."""
        deadline = self.since + CLUSTER_FAILOVER_CAP_MS * 1_000_000
        while not self.promoted() and time.monotonic_ns() < deadline:
            time.sleep(poll)
        return self.promoted(), millis(time.monotonic_ns() - self.since)


def address(node: EmbeddedRedis) -> str:
    return f"{node.host}:{node.port}"


def repl_offset(server: EmbeddedRedis, field: str, *, before_writes: bool = False) -> int:
    """A server's replication offset (`field` of INFO replication); with `before_writes`, of a
    replica just promoted: where its own history as a master began (what it had at the kill)."""
    with server.client(socket_timeout=2, decode_responses=True) as client:
        info = client.info("replication")
    if before_writes:
        # A promoted replica's second_repl_offset is where its history as a master began.
        second = int(info.get("second_repl_offset", -1))
        if second > 0:
            return second - 1
    return int(info.get(field, 0))
