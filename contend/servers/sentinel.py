"""An embedded Sentinel group: a master, its replica, and three Sentinels watching them.

Every process is an `EmbeddedRedis` (127.0.0.1, a free port, a temporary directory, stopped
with the rest, killed by the kernel if this process dies): the master, a replica started
with `--replicaof`, and three `redis-server sentinel.conf --sentinel` processes that monitor
the master under the name `contend` with a quorum of two. `start()` returns once the replica
is in sync and every Sentinel sees the replica and the other Sentinels, so a failover can
happen at once.

`fail_over()` is a real failover: the master is killed with SIGKILL, the Sentinels agree it
is down (after `down_after_ms`), elect a leader and promote the replica; it returns how long
that took, measured until a Sentinel names the new master and the new master says it is one.
Clients that follow Sentinel (`redis.sentinel.Sentinel(...).master_for("contend")`) find the
new master on their next connection.
"""

from __future__ import annotations

import contextlib
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis
import redis.sentinel

from contend.errors import ServerError
from contend.servers.binary import RedisBinary, find_redis_server
from contend.servers.server import EmbeddedRedis, Lifecycle, stop_each

MASTER_NAME = "contend"
#: The URL scheme of a Sentinel-watched master: redis+sentinel://HOST:PORT[,HOST:PORT...]/NAME.
URL_SCHEME = "redis+sentinel"
QUORUM = 2
SENTINELS = 3


class EmbeddedSentinel(EmbeddedRedis):
    """A redis-server in Sentinel mode, monitoring `master_port` on 127.0.0.1."""

    def __init__(
        self, binary: RedisBinary, master_port: int, *, down_after_ms: int, failover_ms: int
    ) -> None:
        super().__init__(binary)
        self.master_port = master_port
        self.down_after_ms = down_after_ms
        self.failover_ms = failover_ms

    def _args(self) -> list[str]:
        assert self.dir is not None
        conf = Path(self.dir) / "sentinel.conf"
        if not conf.exists():  # Sentinel rewrites its file; a restart keeps what it learned
            conf.write_text(
                f"sentinel monitor {MASTER_NAME} 127.0.0.1 {self.master_port} {QUORUM}\n"
                f"sentinel down-after-milliseconds {MASTER_NAME} {self.down_after_ms}\n"
                f"sentinel failover-timeout {MASTER_NAME} {self.failover_ms}\n"
                f"sentinel parallel-syncs {MASTER_NAME} 1\n"
            )
        return [
            str(self.binary.path), str(conf), "--sentinel",
            "--port", str(self.port),
            "--bind", self.host,
            "--dir", str(self.dir),
            "--logfile", "redis.log",
            "--daemonize", "no",
        ]  # fmt: skip

    def describe(self) -> str:
        return f"embedded Sentinel at {self.host}:{self.port}"


class EmbeddedSentinelGroup(Lifecycle):
    """A master, one replica and three Sentinels (quorum 2) on 127.0.0.1."""

    def __init__(
        self,
        binary: RedisBinary | None = None,
        *,
        down_after_ms: int = 500,
        failover_ms: int = 5000,
        ready_timeout: float = 30.0,
    ) -> None:
        self.binary = binary or find_redis_server()
        self.down_after_ms = down_after_ms
        self.failover_ms = failover_ms
        self.ready_timeout = ready_timeout
        self.servers: list[EmbeddedRedis] = []
        self.sentinels: list[EmbeddedSentinel] = []

    # Life cycle -------------------------------------------------------------
    def start(self) -> EmbeddedSentinelGroup:
        if self.servers:
            return self
        try:
            master = EmbeddedRedis(self.binary).start()
            self.servers.append(master)
            replica = EmbeddedRedis(self.binary, extra_args=["--replicaof", master.host, str(master.port)])
            self.servers.append(replica.start())
            for _ in range(SENTINELS):
                sentinel = EmbeddedSentinel(
                    self.binary, master.port, down_after_ms=self.down_after_ms, failover_ms=self.failover_ms
                )
                sentinel.start()
                self.sentinels.append(sentinel)
            self._wait_ready()
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 5.0) -> None:
        processes: list[EmbeddedRedis] = [*self.sentinels, *self.servers]
        self.sentinels, self.servers = [], []
        stop_each(processes, timeout)

    # What it is -------------------------------------------------------------
    @property
    def sentinel_addresses(self) -> list[tuple[str, int]]:
        return [(s.host, s.port) for s in self.sentinels]

    @property
    def url(self) -> str:
        """`redis+sentinel://HOST:PORT,.../contend`: the Sentinels, and the master's name."""
        return (
            f"{URL_SCHEME}://" + ",".join(f"{h}:{p}" for h, p in self.sentinel_addresses) + f"/{MASTER_NAME}"
        )

    def sentinel(self, **kwargs: Any) -> redis.sentinel.Sentinel:
        """A redis-py Sentinel client over the three Sentinels."""
        kwargs.setdefault("socket_timeout", 2)
        kwargs.setdefault("socket_connect_timeout", 2)
        return redis.sentinel.Sentinel(self.sentinel_addresses, **kwargs)

    def master_for(self, **kwargs: Any) -> redis.Redis:
        """A client of whichever server is master now, found (and found again) through Sentinel."""
        return self.sentinel(**kwargs).master_for(MASTER_NAME, socket_timeout=5, socket_connect_timeout=2)

    def master(self) -> EmbeddedRedis:
        """The server the Sentinels name as master now."""
        port = self._named_master_port()
        return next(s for s in self.servers if s.port == port)

    def describe(self) -> str:
        return (
            f"embedded {self.binary.product} {self.binary.version} master, replica and {SENTINELS} Sentinels "
            f"(quorum {QUORUM}, down after {self.down_after_ms} ms)"
        )

    # Faults -----------------------------------------------------------------
    def fail_over(self) -> float:
        """Kill the master (SIGKILL) and wait until the Sentinels have promoted the replica;
        seconds from the kill until the new master answers as one. The old master stays down
        (`restart_old_master` brings it back, as a replica)."""
        old, new = self.kill_master()
        killed = time.monotonic()
        deadline = killed + self.ready_timeout
        while time.monotonic() < deadline:
            if self.promoted(new):
                return time.monotonic() - killed
            time.sleep(0.01)
        raise ServerError(
            f"no failover within {self.ready_timeout:g} s of killing the master on port {old.port}; "
            f"a Sentinel's log says:\n{self.sentinels[0].log_tail()}"
        )

    def kill_master(self) -> tuple[EmbeddedRedis, EmbeddedRedis]:
        """SIGKILL the master; (the killed master, the replica the Sentinels are to promote)."""
        old = self.master()
        new = next(s for s in self.servers if s is not old)
        old.kill()
        return old, new

    def promoted(self, server: EmbeddedRedis) -> bool:
        """Do all running Sentinels name `server` as the master, up, and does it say it is one?"""
        return self._all_name(server.port) and _role(server) == "master"

    def replica_in_sync(self) -> bool:
        """Is the server that is not master a replica whose link to the master is up?"""
        master = self.master()
        return any(_in_sync(s) for s in self.servers if s is not master and s.running)

    def restart_old_master(self, server: EmbeddedRedis) -> None:
        """Start a killed server again on its port; the Sentinels turn it into a replica."""
        server.start()

    # Internals --------------------------------------------------------------
    def _all_name(self, port: int) -> bool:
        """Do all running Sentinels name the master on `port`, and see it up (flags just "master":
        what redis-py's Sentinel client asks of a master before it connects)?"""
        return all(
            self._named_by(s) == port and self._flags(s) == "master" for s in self.sentinels if s.running
        )

    def _flags(self, sentinel: EmbeddedSentinel) -> str:
        return str(_master_fields(sentinel).get("flags", ""))

    def _named_by(self, sentinel: EmbeddedSentinel) -> int | None:
        """The master's port as `sentinel` names it (None when it does not answer)."""
        with contextlib.suppress(redis.RedisError), sentinel.client(socket_timeout=1) as client:
            addr = client.execute_command("SENTINEL", "GET-MASTER-ADDR-BY-NAME", MASTER_NAME)
            if addr:
                return int(addr[1])
        return None

    def _named_master_port(self) -> int | None:
        """The master's port as the first running Sentinel that answers names it."""
        for sentinel in self.sentinels:
            if sentinel.running and (port := self._named_by(sentinel)) is not None:
                return port
        return None

    def _wait_ready(self) -> None:
        deadline = time.monotonic() + self.ready_timeout
        replica = self.servers[1]
        while time.monotonic() < deadline:
            if _in_sync(replica) and all(self._sees_everyone(s) for s in self.sentinels):
                return
            time.sleep(0.02)
        raise ServerError(
            f"the Sentinel group did not come together within {self.ready_timeout:g} s; "
            f"a Sentinel's log says:\n{self.sentinels[0].log_tail()}"
        )

    def _sees_everyone(self, sentinel: EmbeddedSentinel) -> bool:
        fields = _master_fields(sentinel)
        return (
            int(fields.get("num-slaves", 0)) >= 1
            and int(fields.get("num-other-sentinels", 0)) >= SENTINELS - 1
        )


def _master_fields(sentinel: EmbeddedSentinel) -> dict[str, Any]:
    """What a Sentinel knows of the master (SENTINEL MASTER), or {} when it does not answer."""
    with contextlib.suppress(redis.RedisError), sentinel.client(socket_timeout=1, decode_responses=True) as c:
        info = c.execute_command("SENTINEL", "MASTER", MASTER_NAME)
        return dict(zip(info[::2], info[1::2], strict=False)) if isinstance(info, list) else dict(info)
    return {}


@dataclass
class Failover:
    """One failover under acknowledged writes (`lost_writes`)."""

    seconds: float
    acked: int  # writes the old or the new master acknowledged
    acked_after: int  # of those, acknowledged once the new master was named
    lost: int  # acknowledged writes missing from the new master afterwards


def lost_writes(group: EmbeddedSentinelGroup, prefix: str = "contend:failover") -> Failover:
    """One failover under a stream of acknowledged writes: a writer sets `prefix:<n>` for n = 0, 1,
    ... through Sentinel while the master is killed, and carries on against the new master."""
    client = group.master_for()
    acked: list[str] = []
    stop = threading.Event()

    def write() -> None:
        n = 0
        while not stop.is_set():
            key = f"{prefix}:{n}"
            n += 1
            try:
                client.set(key, 1)
                acked.append(key)
            except (redis.ConnectionError, redis.TimeoutError, redis.ReadOnlyError):
                time.sleep(0.005)  # no master yet: the write was not acknowledged

    writer = threading.Thread(target=write, name="contend-failover-writer", daemon=True)
    writer.start()
    time.sleep(0.2)
    seconds = group.fail_over()
    before = len(acked)
    time.sleep(0.2)
    stop.set()
    writer.join(5)
    with group.master().client() as new_master:
        present = 0
        for start in range(0, len(acked), 500):
            present += int(new_master.exists(*acked[start : start + 500]))
    client.close()
    return Failover(seconds, len(acked), len(acked) - before, len(acked) - present)


def _role(server: EmbeddedRedis) -> str:
    with contextlib.suppress(redis.RedisError), server.client(socket_timeout=1, decode_responses=True) as c:
        return str(c.info("replication").get("role", ""))
    return ""


def _in_sync(replica: EmbeddedRedis) -> bool:
    with contextlib.suppress(redis.RedisError), replica.client(socket_timeout=1, decode_responses=True) as c:
        return c.info("replication").get("master_link_status") == "up"
    return False
