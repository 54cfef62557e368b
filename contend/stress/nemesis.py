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
`Cluster.stop`.
"""

from __future__ import annotations

import contextlib
import random
import signal
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import ClassVar

import redis

from contend import interrupt
from contend.errors import ContendError, ServerError
from contend.stress.board import Board, Field, WorkerPhase
from contend.stress.cluster import Cluster
from contend.stress.masters import cut_mask
from contend.stress.signals import signal_process, wait_stopped
from contend.target.cluster import EmbeddedCluster
from contend.target.sentinel import EmbeddedSentinelGroup
from contend.target.server import EmbeddedRedis
from contend.target.target import mask_url

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

#: Default length of a server pause, of a client pause outside locks, and the failover's lag (ms).
DEFAULT_FAULT_MS = 500
DEFAULT_LAG_MS = 100
#: A cluster or Sentinel failover lasts at least this long (ms): the cluster fails a master after
#: its cluster-node-timeout (`Cluster`'s 1000 ms), then its replica waits 500 ms or more to be
#: elected; Sentinels agree after down-after-milliseconds (500), then elect a leader that promotes.
CLUSTER_FAILOVER_MS = 1500
#: The longest a cluster or Sentinel failover is waited for before the fault ends anyway (ms).
CLUSTER_FAILOVER_CAP_MS = 20_000


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
                f"--nemesis {refused[0]} acts on the counter's server, not on the lock; with --masters "
                "use master-pause, master-restart or partition (or client-pause)"
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


@dataclass
class NemesisContext:
    """What faults act on: the servers, the workers (OS pids by index) and their board."""

    cluster: Cluster
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


def _ms(ns: int) -> int:
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
            f"stop: process {process} (pid {pid}) resumed after {_ms(time.monotonic_ns() - self.since)} ms"
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
        cluster = self.ctx.cluster
        ms = self.ctx.fault_ms or DEFAULT_FAULT_MS
        self.since = time.monotonic_ns()
        if cluster.owned:
            assert cluster.primary is not None
            cluster.primary.pause()
            wait_stopped(cluster.primary.pid or 0)
            self.paused = cluster.primary
            self.record(f"start: redis-server (pid {cluster.primary.pid}) stopped with SIGSTOP for {ms} ms")
        else:
            client = cluster.control()
            try:
                client.execute_command("CLIENT", "PAUSE", ms)
            finally:
                client.close()
            self.client_pause = True
            self.record(f"start: CLIENT PAUSE {ms} (every client of the server waits)")
        return True

    def end(self) -> None:
        elapsed = _ms(time.monotonic_ns() - self.since)
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
        pid = self.ctx.cluster.kill_primary()
        self.killed = True
        self.since = time.monotonic_ns()
        held = [
            board.get(w, Field.PROCESS) for w in holders if board.get(w, Field.PHASE) == WorkerPhase.HOLDING
        ]
        note = f" while process {', '.join(map(str, held))} held the lock" if held else ""
        self.record(f"start: redis-server (pid {pid}) killed with SIGKILL{note}")
        return True

    def end(self) -> None:
        cluster = self.ctx.cluster
        restarted = cluster.restart_primary()
        self.killed = False
        kept = {
            "none": "persistence off: its data is gone",
            "aof": f"AOF, appendfsync {cluster.appendfsync}: data reloaded",
            "rdb": "RDB snapshots: data as of the last save",
        }[cluster.persistence]
        self.record(
            f"stop: redis-server restarted (pid {restarted.pid}) after "
            f"{_ms(time.monotonic_ns() - self.since)} ms, {kept}"
        )

    def heal(self) -> None:
        self.killed = False  # Cluster.stop cleans up; a run that is ending needs no restart


class Failover(Fault):
    """Cut replication, let the master acknowledge writes alone, kill it, promote the replica."""

    name = "failover"

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.offset = 0
        self.cut = False

    def begin(self) -> bool:
        cluster = self.ctx.cluster
        if cluster.replica is None:
            cluster.start_replica()
        assert cluster.replica is not None
        self.offset = cluster.cut_replication()
        self.cut = True
        self.since = time.monotonic_ns()
        self.record(
            f"start: replication to the replica (pid {cluster.replica.pid}) cut; "
            "the master acknowledges writes no replica has"
        )
        return True

    def due(self, now: int) -> bool:
        elapsed = now - self.since
        if elapsed < self.min_ns():
            return False
        return elapsed >= self.ctx.lag_ms * 1_000_000 + 2_000_000_000 or (
            self.ctx.cluster.master_offset() > self.offset
        )

    def end(self) -> None:
        cluster = self.ctx.cluster
        lag = _ms(time.monotonic_ns() - self.since)
        lost = self.ctx.cluster.master_offset() - self.offset
        old_pid, new = cluster.promote()
        self.cut = False
        self.record(
            f"stop: master (pid {old_pid}) killed with SIGKILL {lag} ms after the cut; replica promoted "
            f"at {new.host}:{new.port}; {lost} bytes of acknowledged writes never reached it"
        )
        cluster.start_replica()

    def heal(self) -> None:
        if self.cut:
            self.ctx.cluster.heal()
            self.cut = False


class SentinelFailover(Fault):
    """kill -9 the master; its Sentinels promote the replica; the workers follow Sentinel."""

    name = "sentinel-failover"

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.killed: EmbeddedRedis | None = None
        self.new: EmbeddedRedis | None = None
        self.master_offset = 0

    @property
    def group(self) -> EmbeddedSentinelGroup:
        assert self.ctx.cluster.group is not None, "sentinel-failover needs the Sentinel group"
        return self.ctx.cluster.group

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
        self.master_offset = _repl_offset(self.group.master(), "master_repl_offset")
        self.killed, self.new = self.group.kill_master()
        self.since = time.monotonic_ns()
        note = f" while process {', '.join(map(str, held))} held the lock" if held and self.ctx.lock else ""
        self.record(
            f"start: master {_addr(self.killed)} killed with SIGKILL{note}; its Sentinels are to "
            f"promote the replica {_addr(self.new)}"
        )
        return True

    def _promoted(self) -> bool:
        assert self.new is not None
        with contextlib.suppress(redis.RedisError):
            return self.group.promoted(self.new)
        return False

    def due(self, now: int) -> bool:
        elapsed = now - self.since
        if elapsed < self.min_ns():
            return False
        return elapsed >= CLUSTER_FAILOVER_CAP_MS * 1_000_000 or self._promoted()

    def end(self) -> None:
        if self.killed is None or self.new is None:
            return
        deadline = self.since + CLUSTER_FAILOVER_CAP_MS * 1_000_000
        while not self._promoted() and time.monotonic_ns() < deadline:
            time.sleep(0.02)
        promoted = self._promoted()
        took = _ms(time.monotonic_ns() - self.since)
        self.group.restart_old_master(self.killed)
        cluster = self.ctx.cluster
        if promoted:
            cluster.primary = self.new
            cluster.note_pids()
            lag = max(
                0, self.master_offset - _repl_offset(self.new, "master_repl_offset", before_writes=True)
            )
            outcome = (
                f"the Sentinels promoted {_addr(self.new)} after {took} ms; at the kill it lacked about "
                f"{lag} bytes of the master's replication stream (acknowledged writes it never got)"
            )
        else:
            outcome = f"the Sentinels did not promote {_addr(self.new)} within {took} ms"
        self.record(
            f"stop: {outcome}; the old master restarted empty (pid {self.killed.pid}) and becomes a replica"
        )
        self.killed = self.new = None

    def heal(self) -> None:
        self.killed = self.new = None  # the group stops with the run


def _repl_offset(server: EmbeddedRedis, field: str, *, before_writes: bool = False) -> int:
    with server.client(socket_timeout=2, decode_responses=True) as client:
        info = client.info("replication")
    if before_writes:
        # A promoted replica's second_repl_offset is where its history as a master began.
        second = int(info.get("second_repl_offset", -1))
        if second > 0:
            return second - 1
    return int(info.get(field, 0))


class MasterFault(Fault):
    """A fault on one of Redlock's masters (--masters N), taken in turn."""

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.master: int | None = None

    @property
    def masters(self) -> list[EmbeddedRedis]:
        return self.ctx.cluster.lock_masters

    def describe(self, k: int) -> str:
        server = self.masters[k]
        return f"lock master {k} ({_addr(server)}, pid {server.pid})"


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
            f"stop: {self.describe(self.master)} resumed after {_ms(time.monotonic_ns() - self.since)} ms"
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

    def declined_because(self) -> str:
        return "it waits a little for a lease on a bare majority of the masters, and the run ended first"

    def _leases(self) -> dict[bytes, list[int]]:
        """Each token on the lock key now, with the masters holding it."""
        held: dict[bytes, list[int]] = {}
        for k, server in enumerate(self.masters):
            with contextlib.suppress(redis.RedisError), server.client(socket_timeout=0.2) as client:
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
        self.ctx.cluster.note_pids()
        self.record(
            f"stop: {self.describe(self.master)} restarted after {_ms(time.monotonic_ns() - self.since)} ms, "
            "empty (persistence off): the leases it held are gone"
        )
        self.master = None

    def heal(self) -> None:
        self.master = None  # the masters stop with the run


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
            f"stop: process {process} reaches every master again after {_ms(time.monotonic_ns() - self.since)} ms"
        )
        self.worker = None

    def heal(self) -> None:
        for w in range(self.ctx.board.procs):
            self.ctx.board.set(w, Field.CUT, 0)
        self.worker = None


def _describe_slot(slot: int, keys: Sequence[str]) -> str:
    shown = ", ".join(keys[:3]) + (f" and {len(keys) - 3} more" if len(keys) > 3 else "")
    return f"slot {slot} ({shown})" if keys else f"slot {slot}"


def _addr(node: EmbeddedRedis) -> str:
    return f"{node.host}:{node.port}"


class ClusterFault(Fault):
    """A fault on an embedded Redis Cluster, at a slot that holds the run's keys."""

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.slot: int | None = None
        self.keys: list[str] = []

    @property
    def nodes(self) -> EmbeddedCluster:
        assert self.ctx.cluster.nodes is not None, "a cluster nemesis needs --cluster"
        return self.ctx.cluster.nodes

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
            f"start: {_describe_slot(self.slot, self.keys)} migrating from {_addr(source)} to "
            f"{_addr(self.to)}: {self.moved} key(s) moved; the old owner answers ASK for them until it ends"
        )
        return True

    def end(self) -> None:
        if self.slot is None or self.to is None:
            return
        more = self.nodes.finish_move(self.slot, self.to)
        self.record(
            f"stop: slot {self.slot} now served by {_addr(self.to)} after "
            f"{_ms(time.monotonic_ns() - self.since)} ms ({self.moved + more} key(s) moved in all); "
            "clients with the old slot map get MOVED"
        )
        self.slot = self.to = None

    def heal(self) -> None:
        self.slot = self.to = None  # the cluster stops with the run


class ClusterFailover(ClusterFault):
    """kill -9 the master of a slot holding the run's keys; the cluster promotes its replica."""

    name = "cluster-failover"

    def __init__(self, ctx: NemesisContext) -> None:
        super().__init__(ctx)
        self.killed: EmbeddedRedis | None = None
        self.replica: EmbeddedRedis | None = None

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
        master.kill()
        self.killed, self.replica = master, replica
        self.since = time.monotonic_ns()
        self.record(
            f"start: master {_addr(master)} (pid {pid}) serving {_describe_slot(self.slot, self.keys)} "
            f"killed with SIGKILL; the cluster is to promote its replica {_addr(replica)}"
        )
        return True

    def _promoted(self) -> bool:
        assert self.replica is not None
        with contextlib.suppress(redis.RedisError):
            return self.nodes.role_of(self.replica) == "master" and self.nodes.serves(self.replica, self.slot)
        return False

    def due(self, now: int) -> bool:
        elapsed = now - self.since
        if elapsed < self.min_ns():
            return False
        return elapsed >= CLUSTER_FAILOVER_CAP_MS * 1_000_000 or self._promoted()

    def end(self) -> None:
        if self.killed is None or self.replica is None:
            return
        deadline = self.since + CLUSTER_FAILOVER_CAP_MS * 1_000_000
        while not self._promoted() and time.monotonic_ns() < deadline:
            time.sleep(0.05)
        promoted = self._promoted()
        took = _ms(time.monotonic_ns() - self.since)
        self.killed.start()
        outcome = (
            f"replica {_addr(self.replica)} promoted; it serves slot {self.slot} after {took} ms"
            if promoted
            else f"replica {_addr(self.replica)} was not promoted within {took} ms"
        )
        self.record(
            f"stop: {outcome}; the old master restarted (pid {self.killed.pid}) with persistence off, "
            "and rejoins as a replica"
        )
        self.killed = self.replica = None

    def heal(self) -> None:
        self.killed = self.replica = None  # the cluster stops with the run


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

    def why_none(self, name: str, *, ran: float, duration: float) -> str:
        """Why nemesis `name` injected no fault in a run whose load lasted `ran` of `duration` seconds."""
        fault = next(f for f in self.faults if f.name == name)
        interval = self.interval_ns / 1e9
        head = f"--nemesis {name} injected no fault: "
        if fault.declined:
            return (
                head + f"{fault.declined_because()}; it tried {fault.declined} time(s) in {ran:.1f} s; "
                "raise --duration or lower --interval"
            )
        if fault.unfit:
            return (
                head + f"when its turn came, a fault of at least {_ms(fault.min_ns())} ms no longer fit in "
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
            return f"{self.active.name} ({_ms(time.monotonic_ns() - self.active.since)} ms)"
        return f"{self.count} fault(s) so far"
