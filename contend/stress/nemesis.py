"""Faults a stress run injects, each recorded in the history as nemesis info events (start, stop).

client-pause  SIGSTOP one worker process, SIGCONT it later. For a lock, the worker
              is one that holds the lease and has not written yet, and it stays
              stopped past the lease's TTL until another worker has taken the lock
              and written: its own write then comes from a holder whose lease is gone.
server-pause  SIGSTOP the embedded server for the fault's length, then SIGCONT;
              against --redis-url, CLIENT PAUSE for that long (it ends by itself).
server-kill   kill -9 the embedded server and start it again on the same port and
              directory: what survives depends on its persistence. Embedded only.
failover      the embedded server has a replica. Cut the replication link (the
              replica is paused and the master drops it), let the master acknowledge
              writes alone, kill -9 it, promote the replica (REPLICAOF NO ONE) and
              point the workers at it: the writes acknowledged since the cut are lost,
              as asynchronous replication allows. Embedded only.
sentinel-failover
              the embedded master has a replica and three Sentinels watching them
              (workers reach the master through Sentinel, redis.sentinel). kill -9 the
              master; the Sentinels agree it is down, promote the replica, and the
              workers find it on their next connection. The writes the replica had not
              received are lost. The old master restarts empty and becomes a replica.
master-pause  (--masters N, Redlock) SIGSTOP one of the lock's masters for the fault's
              length, then SIGCONT.
master-restart
              (--masters N) kill -9 one of the lock's masters and start it again,
              empty (persistence off), after the fault's length (default 50 ms). It
              waits a little for the moment a holder's lease is on a bare majority of
              the masters and takes one of those: Kleppmann's counterexample.
partition     (--masters N) cut one worker off from a minority of the masters for
              the fault's length: its round trips to them fail before they are sent.
reshard       (--cluster N) move a slot holding the run's keys to another master, as
              redis-cli --cluster reshard does: the slot is migrating and its keys
              moved for the fault's length (the old owner answers ASK), then the slot
              is given to the new master (clients with the old map get MOVED).
cluster-failover
              (--cluster N) kill -9 the master serving a slot that holds the run's
              keys; the cluster fails it and promotes its replica by itself (after
              cluster-node-timeout). The old master is restarted, empty, and rejoins
              as the new master's replica.

Every fault is healed when it ends, when the run ends and on Ctrl-C: stopped
workers and servers get SIGCONT; the servers a run started are stopped by
`Deployment.stop`.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Sequence

from contend import interrupt
from contend.errors import ContendError
from contend.servers.urls import mask_url
from contend.stress.fault import (
    CLUSTER_FAILOVER_CAP_MS,
    CLUSTER_FAILOVER_MS,
    DEFAULT_FAULT_MS,
    DEFAULT_LAG_MS,
    Fault,
    NemesisContext,
    least_ms,
    millis,
)
from contend.stress.faults_cluster import ClusterFailover, Reshard
from contend.stress.faults_redlock import MasterPause, MasterRestart, Partition
from contend.stress.faults_sentinel import SentinelFailover
from contend.stress.faults_server import ClientPause, Failover, ServerKill, ServerPause

__all__ = [
    "CLUSTER_FAILOVER_CAP_MS",
    "CLUSTER_FAILOVER_MS",
    "DEFAULT_FAULT_MS",
    "DEFAULT_LAG_MS",
    "FAULTS",
    "NEMESES",
    "ClientPause",
    "ClusterFailover",
    "Failover",
    "Fault",
    "MasterPause",
    "MasterRestart",
    "Nemesis",
    "NemesisContext",
    "Partition",
    "Reshard",
    "SentinelFailover",
    "ServerKill",
    "ServerPause",
    "least_ms",
    "parse_nemeses",
    "unreachable",
]

#: What each nemesis does, in a few words (for --help and errors).
NEMESES: dict[str, str] = {
    "client-pause": "SIGSTOP a worker (a lock holder, past its lease) and SIGCONT it later",
    "server-pause": "SIGSTOP the embedded server (CLIENT PAUSE with --redis-url)",
    "server-kill": "kill -9 the embedded server and restart it (see --persistence)",
    "failover": "kill -9 the master after cutting replication, promote its replica",
    "sentinel-failover": "kill -9 the master; its three Sentinels promote the replica (workers follow Sentinel)",
    "master-pause": "SIGSTOP one of Redlock's masters (--masters N)",
    "master-restart": "kill -9 one of Redlock's masters and restart it empty (--masters N)",
    "partition": "cut a worker off from a minority of Redlock's masters (--masters N)",
    "reshard": "move a slot holding the run's keys to another master (--cluster N)",
    "cluster-failover": "kill -9 the master of the run's keys; the cluster promotes its replica (--cluster N)",
}
EMBEDDED_ONLY = ("server-kill", "failover", "sentinel-failover")
#: Nemeses for an embedded Redis Cluster (--cluster N) only, and the ones that act on one server.
CLUSTER_ONLY = ("reshard", "cluster-failover")
SINGLE_SERVER_ONLY = ("server-pause", "server-kill", "failover", "sentinel-failover")
#: Nemeses for Redlock's masters (--masters N) only.
MASTERS_ONLY = ("master-pause", "master-restart", "partition")


def parse_nemeses(
    texts: Sequence[str] | None,
    *,
    redis_url: str | None = None,
    cluster: bool = False,
    masters: bool = False,
) -> tuple[str, ...]:
    """`--nemesis` values (repeatable, comma-separated) → names; ContendError for unknown ones,
    and for one the target cannot take (`cluster`: the run is on an embedded Redis Cluster;
    `masters`: the lock is Redlock over --masters N)."""
    names: list[str] = []
    for text in texts or ():
        for part in text.split(","):
            name = part.strip()
            if not name or name == "none":
                continue
            if name not in NEMESES:
                raise ContendError(
                    f"unknown nemesis {name!r}: expected one of {', '.join(NEMESES)} "
                    "(repeat --nemesis or separate names with commas)"
                )
            if name not in names:
                names.append(name)
    if masters:
        refused = [n for n in names if n not in (*MASTERS_ONLY, "client-pause")]
        if refused:
            raise ContendError(
                f"--nemesis {refused[0]} does not act on Redlock's masters; with --masters use "
                "master-pause, master-restart or partition (or client-pause)"
            )
        return tuple(names)
    refused = [n for n in names if n in MASTERS_ONLY]
    if refused:
        raise ContendError(
            f"--nemesis {refused[0]} acts on Redlock's masters: run --only redlock (over --masters N)"
        )
    if cluster:
        refused = [n for n in names if n in SINGLE_SERVER_ONLY]
        if refused:
            raise ContendError(
                f"--nemesis {refused[0]} acts on one server; on a cluster (--cluster) use reshard or "
                "cluster-failover (or client-pause)"
            )
    else:
        refused = [n for n in names if n in CLUSTER_ONLY]
        if refused:
            raise ContendError(
                f"--nemesis {refused[0]} needs an embedded Redis Cluster: add --cluster 3 (and drop "
                "--redis-url; contend changes no cluster it did not start)"
            )
    if "failover" in names and "sentinel-failover" in names:
        raise ContendError(
            "--nemesis failover promotes the replica by hand and sentinel-failover lets Sentinels do it: "
            "give one of them"
        )
    if redis_url:
        refused = [n for n in names if n in EMBEDDED_ONLY]
        if refused:
            raise ContendError(
                f"--nemesis {refused[0]} kills a server, and contend never kills a server it did not "
                f"start ({mask_url(redis_url)}); drop --redis-url to use the embedded server, or use "
                "client-pause / server-pause (CLIENT PAUSE) there"
            )
    return tuple(names)


# --------------------------------------------------------------------------- faults


def _seconds(s: float) -> str:
    return f"{s:.2g} s" if s < 1 else f"{s:.3g} s"


def unreachable(
    names: Sequence[str],
    *,
    duration: float,
    interval: float,
    lock: bool,
    ttl_ms: int,
    fault_ms: int | None,
    lag_ms: int,
) -> str | None:
    """Why some nemesis in `names` cannot inject a single fault in a run of `duration` seconds,
    or None. Faults take turns, `interval` seconds apart, and one is begun only if it fits."""
    start = 0.0
    before: list[str] = []
    for name in names:
        start += interval
        least = least_ms(name, lock=lock, ttl_ms=ttl_ms, fault_ms=fault_ms, lag_ms=lag_ms) / 1000
        if start + least >= duration:
            when = (
                f"after --interval {interval:g} s"
                if not before
                else f"after {_seconds(start)} at the earliest (faults take turns, --interval "
                f"{interval:g} s apart, and {', '.join(before)} {'comes' if len(before) == 1 else 'come'} first)"
            )
            return (
                f"--nemesis {name} cannot inject a fault: the run lasts {duration:g} s, and its first fault "
                f"comes {when} and lasts at least {round(least * 1000)} ms; raise --duration or lower --interval"
            )
        start += least
        before.append(name)
    return None


FAULTS: dict[str, type[Fault]] = {
    f.name: f
    for f in (
        ClientPause,
        ServerPause,
        ServerKill,
        Failover,
        SentinelFailover,
        MasterPause,
        MasterRestart,
        Partition,
        Reshard,
        ClusterFailover,
    )
}


class Nemesis:
    """Runs the chosen faults in turn: one at a time, `interval` seconds apart."""

    def __init__(self, names: Sequence[str], ctx: NemesisContext, interval: float) -> None:
        self.faults = [FAULTS[n](ctx) for n in names]
        self.ctx = ctx
        self.interval_ns = int(interval * 1e9)
        self.active: Fault | None = None
        self.turn = 0
        self.next_at = 0
        self.end_at: int | None = None
        self.count = 0

    def start(self, now: int, end: int | None = None) -> None:
        """The run starts at `now` and ends at `end`: no fault begins that would not fit."""
        self.next_at = now + self.interval_ns
        self.end_at = end

    def tick(self, now: int) -> None:
        """Begin, or end, a fault when it is time: whole, with its record, even under Ctrl-C."""
        if not self.faults:
            return
        with interrupt.deferred():
            self._tick(now)

    def _tick(self, now: int) -> None:
        if self.active is not None:
            if self.active.due(now):
                self.active.end()
                self.active = None
                self.next_at = time.monotonic_ns() + self.interval_ns
            return
        if now >= self.next_at:
            fault = self.faults[self.turn % len(self.faults)]
            if self.end_at is not None and now + fault.min_ns() > self.end_at:
                fault.unfit += 1
                return
            if fault.begin():
                self.active = fault
                self.turn += 1
                self.count += 1
                fault.begun += 1
            else:
                fault.declined += 1

    def finish(self) -> None:
        """End the fault in effect, recording it (the run's normal end)."""
        if self.active is not None:
            fault, self.active = self.active, None
            fault.end()

    def heal(self) -> None:
        """Undo every fault, record nothing (Ctrl-C, errors); safe to call twice."""
        self.active = None
        for fault in self.faults:
            with contextlib.suppress(Exception):
                fault.heal()

    def took_effect(self, name: str) -> bool:
        """Did nemesis `name` begin a fault that took effect (not only one that was begun)?"""
        fault = next(f for f in self.faults if f.name == name)
        return fault.begun > len(fault.missed)

    def why_none(self, name: str, *, ran: float, duration: float) -> str:
        """Why nemesis `name` injected no fault in a run whose load lasted `ran` of `duration` seconds."""
        fault = next(f for f in self.faults if f.name == name)
        interval = self.interval_ns / 1e9
        head = f"--nemesis {name} injected no fault: "
        if fault.begun and len(fault.missed) >= fault.begun:
            return head + f"it began {fault.begun} time(s) and never took effect: {fault.missed[0]}"
        if fault.declined:
            return (
                head + f"{fault.declined_because()}; it tried {fault.declined} time(s) in {ran:.1f} s; "
                "raise --duration or lower --interval"
            )
        if fault.unfit:
            return (
                head
                + f"when its turn came, a fault of at least {millis(fault.min_ns())} ms no longer fit in "
                f"the {duration:g} s run; raise --duration or lower --interval"
            )
        if ran < duration - max(0.1, interval):
            return head + f"the workers stopped after {ran:.1f} s of the {duration:g} s run, before its turn"
        others = [f.name for f in self.faults if f is not fault and f.begun]
        if others:
            return (
                head + f"the faults take turns, --interval {interval:g} s apart, and the {duration:g} s run "
                f"ended while {', '.join(others)} had theirs; raise --duration or lower --interval"
            )
        return (
            head
            + f"the run lasted {duration:g} s and the first fault comes after --interval {interval:g} s; "
            "raise --duration or lower --interval"
        )

    @property
    def status(self) -> str:
        if not self.faults:
            return ""
        if self.active is not None:
            return f"{self.active.name} ({millis(time.monotonic_ns() - self.active.since)} ms)"
        return f"{self.count} fault(s) so far"
