"""The servers of a run (a kind of target, the one road to a server): an embedded primary (and, for failover, a replica), an
embedded Redis Cluster (--cluster N), an embedded Sentinel group (master, replica and three
Sentinels, for the sentinel-failover nemesis), or a --redis-url one.

Every server a run starts is stopped by `Deployment.stop`; `heal` resumes any
that a nemesis left paused.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from urllib.parse import urlsplit

import redis

from contend.errors import ServerError
from contend.servers.binary import RedisBinary, find_redis_server
from contend.servers.clock import ServerClock
from contend.servers.cluster import NODE_TIMEOUT_MS, EmbeddedCluster
from contend.servers.cluster_client import SlotCheckingCluster
from contend.servers.connect import describe_server
from contend.servers.sentinel import EmbeddedSentinelGroup
from contend.servers.server import EmbeddedRedis, Lifecycle, Persistence, clock_of, stop_each
from contend.servers.signals import wait_stopped
from contend.servers.urls import is_cluster_url, is_sentinel_url, node_url, sentinel_master

#: The node timeout of a cluster that keeps the run's clock: its nodes' time jumps (a stall, every
#: example starting at the clock's epoch, real time between examples), and a jump past the timeout
#: while a ping was unanswered would have them fail each other (cluster_state:fail, CLUSTERDOWN)
#: at moments real load decides. Nothing in such a run fails a node over (stress, whose faults do,
#: keeps real time), so the nodes never time each other out (about 31 years).
CLOCK_NODE_TIMEOUT_MS = 10**12


class Deployment(Lifecycle):
    """The servers of a run: an embedded primary (and, for failover, a replica), or a --redis-url one.

    `on_move(url)` is called when the primary's address changes (a failover).
    """

    def __init__(
        self,
        *,
        redis_url: str | None = None,
        redis_server: str | None = None,
        persistence: Persistence = "none",
        appendfsync: str = "always",
        replica: bool = False,
        cluster: int | None = None,
        cluster_replicas: int = 0,
        node_timeout_ms: int | None = 1000,
        sentinel: bool = False,
        masters: int = 0,
        counter: bool = True,
        keep_clock: bool = True,
    ) -> None:
        self.redis_url = redis_url
        #: The clock every server this run starts keeps (contend.servers.clock): real time until a
        #: scheduler drives it. None on a --redis-url server, and for runs in real time only
        #: (stress, load: `keep_clock=False`), whose servers run without libfaketime.
        self.clock: ServerClock | None = ServerClock() if keep_clock and not redis_url else None
        if keep_clock and redis_url and not is_sentinel_url(redis_url):
            # A server this process started keeps the clock it was given.
            with contextlib.suppress(ValueError):  # a malformed URL is refused when it is connected
                where = urlsplit(node_url(redis_url))
                self.clock = clock_of(where.hostname, where.port)
        self._own_clock = not redis_url
        #: With `masters`: a server of its own besides them (stress keeps its counter there); without
        #: it, the first master is the run's server (`contend check --masters N`).
        self.counter = counter
        try:
            self.binary: RedisBinary | None = (
                None if redis_url else find_redis_server(redis_server, keep_clock=self.clock is not None)
            )
        except BaseException:
            if self.clock is not None and self._own_clock:
                self.clock.close()
            raise
        self.persistence: Persistence = persistence
        self.appendfsync = appendfsync
        self.want_replica = replica
        self.primary: EmbeddedRedis | None = None
        self.replica: EmbeddedRedis | None = None
        #: Every server this run started, for `stop` and for the record of what ran.
        self.started: list[EmbeddedRedis] = []
        self.pids_seen: list[int] = []
        self.description = ""
        self.on_move: Callable[[str], None] = lambda url: None
        #: The embedded Redis Cluster of --cluster N (None: one server).
        self.nodes: EmbeddedCluster | None = None
        if cluster is not None and self.binary is not None:
            self.nodes = EmbeddedCluster(
                cluster,
                cluster_replicas,
                self.binary,
                node_timeout_ms=(
                    node_timeout_ms
                    if node_timeout_ms is not None
                    else CLOCK_NODE_TIMEOUT_MS
                    if self.clock is not None
                    else NODE_TIMEOUT_MS
                ),
                clock=self.clock,
            )

        #: With --masters N: the lock's own masters (Redlock), apart from the counter's server.
        self.masters_wanted = masters
        self.lock_masters: list[EmbeddedRedis] = []
        #: The embedded Sentinel group (sentinel-failover), whose workers follow Sentinel.
        self.group: EmbeddedSentinelGroup | None = None
        if sentinel and self.binary is not None:
            self.group = EmbeddedSentinelGroup(self.binary)

    @property
    def owned(self) -> bool:
        """Did this run start the server (so it may be paused with SIGSTOP, killed, failed over)?"""
        return self.redis_url is None

    @property
    def url(self) -> str:
        if self.redis_url:
            return self.redis_url
        if self.nodes is not None:
            return self.nodes.url
        if self.group is not None:
            return self.group.url
        if self.primary is None and self.lock_masters:
            return self.lock_masters[0].url
        assert self.primary is not None
        return self.primary.url

    @property
    def primary_description(self) -> str:
        """The embedded primary in a few words ("Redis 6.2.5 at 127.0.0.1:PORT"), else the description."""
        return self.primary.describe() if self.primary is not None else self.description

    @property
    def is_cluster(self) -> bool:
        """Is the target a Redis Cluster (embedded or --redis-url redis+cluster://)?"""
        return self.nodes is not None or is_cluster_url(self.url)

    def start(self) -> Deployment:
        if self.redis_url:
            self.description = describe_server(self.redis_url)
            return self
        if self.nodes is not None:
            self.nodes.start()  # stops every node it started if it fails (or Ctrl-C)
            self.started = list(self.nodes.nodes)
            self.note_pids()
            self.description = f"{self.nodes.describe()} ({self.nodes.binary.source}), joined in {self.nodes.joined_in:.1f} s"
            return self
        if self.group is not None:
            self.group.start()  # stops every process it started if it fails (or Ctrl-C)
            self.started = [*self.group.servers, *self.group.sentinels]
            self.primary = self.group.servers[0]
            self.note_pids()
            self.description = f"{self.group.describe()} ({self.group.binary.source})"
            return self
        assert self.binary is not None
        if self.masters_wanted and not self.counter:
            self.start_masters()
            first = self.lock_masters[0]
            self.description = (
                f"{len(self.lock_masters)} independent embedded masters ({first.binary.product} "
                f"{first.binary.version}, {self.binary.source}, no persistence) at "
                + ", ".join(f":{m.port}" for m in self.lock_masters)
            )
            return self
        self.primary = EmbeddedRedis(
            self.binary,
            persistence=self.persistence,
            appendfsync=self.appendfsync,  # type: ignore[arg-type]
            clock=self.clock,
        )
        self.started.append(self.primary)  # before start: Ctrl-C during it must still stop it
        self.primary.start()
        self.note_pids()
        self.description = self.primary.describe() + f" ({self.binary.source})"
        if self.persistence != "none":
            fsync = f", appendfsync {self.appendfsync}" if self.persistence == "aof" else ""
            self.description += f", persistence {self.persistence}{fsync}"
        if self.want_replica:
            self.start_replica()
            self.description += " with a replica"
        self.start_masters()
        if self.lock_masters:
            self.description += (
                f", and {len(self.lock_masters)} independent masters for the lock (persistence off)"
            )
        return self

    def start_masters(self) -> None:
        """The lock's independent masters, without persistence: a restart comes back empty."""
        assert self.binary is not None
        for _ in range(self.masters_wanted):
            master = EmbeddedRedis(self.binary, clock=self.clock)
            self.started.append(master)  # before start: Ctrl-C during it must still stop it
            self.lock_masters.append(master.start())
            self.note_pids()

    def control(self, server: EmbeddedRedis | None = None) -> redis.Redis:
        """A short-lived client for the harness's own commands."""
        if server is not None:
            return server.client(socket_timeout=5)
        if self.group is not None:
            return sentinel_master(self.url, socket_timeout=5, socket_connect_timeout=5)
        if self.is_cluster:
            return SlotCheckingCluster.from_url(  # type: ignore[return-value]
                node_url(self.url), socket_timeout=5, socket_connect_timeout=5
            )
        return redis.Redis.from_url(self.url, socket_timeout=5, socket_connect_timeout=5)

    def pids(self) -> list[int]:
        """Process ids of every redis-server this run has started so far (restarts included)."""
        self.note_pids()
        return list(self.pids_seen)

    def note_pids(self) -> None:
        """Remember the pids of every server started so far (a restart gives a new one)."""
        for server in self.started:
            if server.pid is not None and server.pid not in self.pids_seen:
                self.pids_seen.append(server.pid)

    def kill_primary(self) -> int | None:
        """kill -9 the primary, keeping its directory; its pid."""
        assert self.primary is not None
        pid = self.primary.pid
        self.primary.kill()
        return pid

    def restart_primary(self) -> EmbeddedRedis:
        """Start the killed primary again, on its port and directory."""
        assert self.primary is not None
        self.primary.start()
        self.note_pids()
        return self.primary

    # Faults ---------------------------------------------------------------------------------
    def start_replica(self, timeout: float = 10.0) -> EmbeddedRedis:
        """Start a replica of the primary and wait until it has synced."""
        assert self.primary is not None and self.binary is not None
        replica = EmbeddedRedis(
            self.binary,
            persistence=self.persistence,
            appendfsync=self.appendfsync,  # type: ignore[arg-type]
            extra_args=["--replicaof", self.primary.host, str(self.primary.port)],
            clock=self.clock,
        )
        self.started.append(replica)
        self.replica = replica.start()
        self.note_pids()
        client = self.control(replica)
        try:
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline:
                info = client.info("replication")
                if info.get("master_link_status") == "up" and not info.get("master_sync_in_progress"):
                    return replica
                time.sleep(0.01)
        finally:
            client.close()
        raise ServerError(
            f"the replica on port {replica.port} did not sync with its master within {timeout} s"
        )

    def master_offset(self) -> int:
        """The primary's replication offset: it grows with every write it accepts."""
        client = self.control(self.primary)
        try:
            return int(client.info("replication").get("master_repl_offset", 0))
        finally:
            client.close()

    def cut_replication(self) -> int:
        """Pause the replica (so it cannot reconnect) and have the master drop it; the offset at the cut."""
        assert self.replica is not None and self.replica.pid is not None
        self.replica.pause()
        wait_stopped(self.replica.pid)
        client = self.control(self.primary)
        try:
            client.execute_command("CLIENT", "KILL", "TYPE", "replica")
            return int(client.info("replication").get("master_repl_offset", 0))
        finally:
            client.close()

    def promote(self) -> tuple[int | None, EmbeddedRedis]:
        """kill -9 the primary, promote the replica, tell the workers; (the old pid, the new primary)."""
        assert self.primary is not None and self.replica is not None
        old, new = self.primary, self.replica
        old_pid = old.pid
        old.kill()
        new.resume()
        client = self.control(new)
        try:
            client.execute_command("REPLICAOF", "NO", "ONE")
        finally:
            client.close()
        self.primary, self.replica = new, None
        old.stop()
        self.on_move(new.url)
        return old_pid, new

    def heal(self) -> None:
        """SIGCONT every server this run started (a no-op for running ones)."""
        for server in self.started:
            if server.running:
                with contextlib.suppress(ServerError, ProcessLookupError):
                    server.resume()

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every server this run started (SIGCONT first: a stopped server ignores SIGTERM)."""
        stop_each(self.started[::-1], timeout)
        if self.nodes is not None:
            self.nodes.stop()
        if self.group is not None:
            self.group.stop()
        self.replica = None
        if self.clock is not None and self._own_clock:
            self.clock.close()
