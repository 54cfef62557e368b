"""An embedded Redis Cluster: real redis-server processes in cluster mode, joined here.

Each node is an `EmbeddedRedis` (127.0.0.1, a free port, a temporary directory, stopped
with the rest, and killed by the kernel if this process dies even by SIGKILL) started
with `cluster-enabled yes`. The cluster is joined with CLUSTER ADDSLOTS and CLUSTER MEET
(what `redis-cli --cluster create` sends, without needing redis-cli): the 16384 hash
slots are split evenly over the masters, every node meets the first, and each replica
is told to CLUSTER REPLICATE its master. `start()` returns once every node reports
`cluster_state:ok` and sees every other node, and every replica is attached.

A node's cluster bus listens on its port + 10000, so ports are chosen with that one free
too (and below 55536).
"""

from __future__ import annotations

import contextlib
import socket
import time
from collections.abc import Sequence
from typing import Any

import redis
import redis.cluster

from contend.errors import ContendError, ServerError
from contend.servers.binary import RedisBinary, find_redis_server
from contend.servers.clock import ServerClock
from contend.servers.server import EmbeddedRedis, Lifecycle, stop_each

SLOTS = 16384
BUS_OFFSET = 10000
#: A master needs at least this many peers for its slots to be split and a failover voted on.
MIN_MASTERS = 3
MAX_MASTERS = 16
MAX_REPLICAS = 3
#: Milliseconds without an answer before a node is failed (and a replica promoted).
NODE_TIMEOUT_MS = 2000
URL_SCHEME = "redis+cluster"


class EmbeddedCluster(Lifecycle):
    """`masters` master nodes, each with `replicas` replicas, on 127.0.0.1."""

    def __init__(
        self,
        masters: int = 3,
        replicas: int = 0,
        binary: RedisBinary | None = None,
        *,
        node_timeout_ms: int = NODE_TIMEOUT_MS,
        join_timeout: float = 30.0,
        clock: ServerClock | None = None,
    ) -> None:
        check_size(masters, replicas)
        self.binary = binary or find_redis_server(keep_clock=clock is not None)
        #: The clock every node keeps (contend.servers.clock); None: real time.
        self.clock = clock
        self.masters_wanted = masters
        self.replicas_wanted = replicas
        self.node_timeout_ms = node_timeout_ms
        self.join_timeout = join_timeout
        self.nodes: list[EmbeddedRedis] = []
        self._ids: dict[int, str] = {}
        #: Seconds the last start() took: the servers up, then the cluster joined.
        self.started_in = 0.0
        self.joined_in = 0.0

    # Life cycle -------------------------------------------------------------
    def start(self) -> EmbeddedCluster:
        """Start every node, join them, and wait until the cluster is ok everywhere."""
        if self.nodes:
            return self
        began = time.monotonic()
        try:
            for _ in range(self.masters_wanted * (1 + self.replicas_wanted)):
                self.nodes.append(self._start_node())
            up = time.monotonic()
            self.started_in = up - began
            self._join()
            self.joined_in = time.monotonic() - up
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self, timeout: float = 5.0) -> None:
        """Stop every node (SIGTERM, then SIGKILL) and delete their directories."""
        nodes, self.nodes = self.nodes, []
        self._ids = {}
        stop_each(nodes, timeout)

    # What it is -------------------------------------------------------------
    @property
    def masters(self) -> list[EmbeddedRedis]:
        return self.nodes[: self.masters_wanted]

    @property
    def replicas(self) -> list[EmbeddedRedis]:
        return self.nodes[self.masters_wanted :]

    @property
    def url(self) -> str:
        """`redis+cluster://127.0.0.1:PORT`: any node; the client finds the others."""
        first = self.nodes[0]
        return f"{URL_SCHEME}://{first.host}:{first.port}"

    @property
    def running(self) -> bool:
        return bool(self.nodes) and all(node.running for node in self.nodes)

    def client(self, **kwargs: Any) -> redis.cluster.RedisCluster:
        """A new redis-py cluster client (it learns the slot map from the first node)."""
        first = self.nodes[0]
        kwargs.setdefault("socket_connect_timeout", 5)
        return redis.cluster.RedisCluster(host=first.host, port=first.port, **kwargs)

    def describe(self) -> str:
        shape = f"{self.masters_wanted} masters"
        if self.replicas_wanted:
            shape += f", {self.replicas_wanted} replica(s) each"
        return f"embedded {self.binary.product} {self.binary.version} cluster ({shape})"

    def slot_ranges(self) -> list[tuple[int, int]]:
        """The slots master i serves: [first, last], split as evenly as 16384 allows."""
        n = self.masters_wanted
        return [(i * SLOTS // n, (i + 1) * SLOTS // n - 1) for i in range(n)]

    def node_ids(self) -> list[str]:
        """Each node's cluster id, in the order of `nodes`."""
        ids = []
        for node in self.nodes:
            with node.client(decode_responses=True) as client:
                ids.append(str(client.execute_command("CLUSTER", "MYID")))
        return ids

    def owner_of(self, slot: int) -> EmbeddedRedis:
        """The master serving `slot` now."""
        with self.nodes[0].client(decode_responses=True) as client:
            for first, last, (_, port, *_) in (row[:3] for row in client.execute_command("CLUSTER", "SLOTS")):
                if int(first) <= slot <= int(last):
                    return next(node for node in self.nodes if node.port == int(port))
        raise ServerError(f"no master serves slot {slot}")

    def move_slot(self, slot: int, to: EmbeddedRedis, batch: int = 100) -> int:
        """Reshard one slot to master `to` as redis-cli does: mark it importing there and
        migrating at its owner, MIGRATE its keys over, then give it to `to` on every master.
        Returns how many keys moved. Clients with the old map get MOVED (or ASK mid-move)."""
        if self.owner_of(slot) is to:
            return 0
        return self.begin_move(slot, to, batch) + self.finish_move(slot, to, batch)

    def begin_move(self, slot: int, to: EmbeddedRedis, batch: int = 100) -> int:
        """The first half of `move_slot`: `slot` importing at `to` and migrating at its owner,
        its keys migrated. Until `finish_move`, the owner answers ASK for any key it no longer
        has and `to` serves it only after ASKING. Returns how many keys moved."""
        source = self.owner_of(slot)
        ids = self._ids_by_port()
        with source.client(decode_responses=True) as src, to.client(decode_responses=True) as dst:
            dst.execute_command("CLUSTER", "SETSLOT", slot, "IMPORTING", ids[source.port])
            src.execute_command("CLUSTER", "SETSLOT", slot, "MIGRATING", ids[to.port])
        return self._migrate(source, to, slot, batch)

    def finish_move(self, slot: int, to: EmbeddedRedis, batch: int = 100) -> int:
        """The second half of `move_slot`: any key left migrated, then `slot` given to `to` on
        every master. Returns how many keys moved in this half."""
        source = self.owner_of(slot)
        moved = self._migrate(source, to, slot, batch) if source is not to else 0
        node_id = self._ids_by_port()[to.port]
        for master in self.masters_now():
            with master.client() as client:
                client.execute_command("CLUSTER", "SETSLOT", slot, "NODE", node_id)
        return moved

    def replica_of(self, master: EmbeddedRedis) -> EmbeddedRedis | None:
        """A node replicating `master` now and in sync with it (its link up: a replica that has
        not finished its first sync is never promoted), or None."""
        node_id = self._ids_by_port()[master.port]
        with master.client(decode_responses=True) as client:
            lines = client.execute_command("CLUSTER", "NODES").splitlines()
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == node_id and "fail" not in fields[2]:
                port = int(fields[1].split("@")[0].rsplit(":", 1)[1])
                node = next((n for n in self.nodes if n.port == port), None)
                if node is not None and self._in_sync(node):
                    return node
        return None

    def _in_sync(self, replica: EmbeddedRedis) -> bool:
        with (
            contextlib.suppress(redis.RedisError),
            replica.client(decode_responses=True, socket_timeout=2) as c,
        ):
            return c.info("replication").get("master_link_status") == "up"
        return False

    def role_of(self, node: EmbeddedRedis) -> str:
        """ "master" or "slave", as the node itself says (INFO replication)."""
        with node.client(decode_responses=True, socket_timeout=2) as client:
            return str(client.info("replication").get("role", "?"))

    def serves(self, node: EmbeddedRedis, slot: int | None) -> bool:
        """Does `node` itself say it serves `slot` (and the cluster is ok there)?"""
        with node.client(decode_responses=True, socket_timeout=2) as client:
            if "cluster_state:ok" not in client.execute_command("CLUSTER", "INFO"):
                return False
            rows = client.execute_command("CLUSTER", "SLOTS")
        return any(
            int(first) <= (slot or 0) <= int(last) and int(owner[1]) == node.port
            for first, last, owner, *_ in rows
        )

    def masters_now(self) -> list[EmbeddedRedis]:
        """The running nodes that are masters now (a failover changes which)."""
        masters = []
        for node in self.nodes:
            if node.running:
                with contextlib.suppress(redis.RedisError):
                    if self.role_of(node) == "master":
                        masters.append(node)
        return masters

    def _ids_by_port(self) -> dict[int, str]:
        if not self._ids:  # ids survive a restart (nodes.conf): learn them once
            self._ids = dict(zip((n.port for n in self.nodes), self.node_ids(), strict=True))
        return self._ids

    def _migrate(self, source: EmbeddedRedis, to: EmbeddedRedis, slot: int, batch: int) -> int:
        moved = 0
        with source.client(decode_responses=True) as src:
            while keys := src.execute_command("CLUSTER", "GETKEYSINSLOT", slot, batch):
                src.execute_command("MIGRATE", to.host, to.port, "", 0, 5000, "KEYS", *keys)
                moved += len(keys)
        return moved

    # Internals --------------------------------------------------------------
    def _start_node(self) -> EmbeddedRedis:
        last: ServerError | None = None
        for _ in range(5):
            node = EmbeddedRedis(
                self.binary,
                port=_free_port_with_bus(),
                extra_args=[
                    "--cluster-enabled", "yes",
                    "--cluster-config-file", "nodes.conf",
                    "--cluster-node-timeout", str(self.node_timeout_ms),
                    "--cluster-require-full-coverage", "yes",
                ],
                clock=self.clock,
            )  # fmt: skip
            try:
                return node.start()
            except ServerError as exc:  # the port (or its bus port) was taken meanwhile
                node.stop()
                last = exc
        raise ServerError(f"could not start a cluster node after 5 tries: {last}")

    def _join(self) -> None:
        clients = [node.client(socket_timeout=5, decode_responses=True) for node in self.nodes]
        try:
            ids = [c.execute_command("CLUSTER", "MYID") for c in clients]
            for client, (first, last) in zip(clients, self.slot_ranges(), strict=False):
                client.execute_command("CLUSTER", "ADDSLOTS", *range(first, last + 1))
            seed = self.nodes[0]
            for client in clients[1:]:
                client.execute_command("CLUSTER", "MEET", seed.host, seed.port)
            deadline = time.monotonic() + self.join_timeout
            self._wait(clients, deadline, lambda c: _knows(c, len(self.nodes)), "see every node")
            for k, client in enumerate(clients[self.masters_wanted :]):
                client.execute_command("CLUSTER", "REPLICATE", ids[k % self.masters_wanted])
            self._wait(clients, deadline, _state_ok, "report cluster_state:ok")
            if self.replicas_wanted:
                self._wait(
                    clients[: self.masters_wanted], deadline, self._replicas_attached, "see their replicas"
                )
        finally:
            for client in clients:
                client.close()

    def _replicas_attached(self, client: redis.Redis) -> bool:
        info = client.info("replication")
        return int(info.get("connected_slaves", 0)) >= self.replicas_wanted

    def _wait(self, clients: Sequence[redis.Redis], deadline: float, ready: Any, what: str) -> None:
        while True:
            waiting = [i for i, c in enumerate(clients) if not ready(c)]
            if not waiting:
                return
            if time.monotonic() > deadline:
                ports = ", ".join(str(self.nodes[i].port) for i in waiting)
                raise ServerError(
                    f"the cluster did not come together within {self.join_timeout:g} s: the nodes on "
                    f"port(s) {ports} did not {what}; the first one's log says:\n"
                    f"{self.nodes[waiting[0]].log_tail()}"
                )
            time.sleep(0.02)


def check_size(masters: int, replicas: int) -> None:
    """ValueError with what to change, for a cluster contend will not build."""
    if not isinstance(masters, int) or not MIN_MASTERS <= masters <= MAX_MASTERS:
        raise ValueError(
            f"a cluster needs {MIN_MASTERS} to {MAX_MASTERS} masters (fewer cannot vote a failover), "
            f"not {masters!r}"
        )
    if not isinstance(replicas, int) or not 0 <= replicas <= MAX_REPLICAS:
        raise ValueError(f"--replicas is per master, 0 to {MAX_REPLICAS}, not {replicas!r}")


def check_cluster_option(masters: int | None, redis_url: str | None) -> None:
    """ContendError for a `--cluster N` contend will not build, or one given with --redis-url."""
    if masters is None:
        return
    if redis_url:
        raise ContendError(
            "--cluster starts an embedded cluster and --redis-url names a server: give one of them "
            f"(an existing cluster: --redis-url {URL_SCHEME}://HOST:PORT)"
        )
    try:
        check_size(masters, 0)
    except ValueError as exc:
        raise ContendError(f"--cluster {masters}: {exc}") from None


def _knows(client: redis.Redis, n: int) -> bool:
    lines = [line for line in client.execute_command("CLUSTER", "NODES").splitlines() if line.strip()]
    return len(lines) >= n and not any("handshake" in line or "noaddr" in line for line in lines)


def _state_ok(client: redis.Redis) -> bool:
    return "cluster_state:ok" in client.execute_command("CLUSTER", "INFO")


def _free_port_with_bus() -> int:
    """A free port below 55536 whose cluster bus port (+10000) is free too."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", 0))
            port = int(sock.getsockname()[1])
        if port + BUS_OFFSET > 65535:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as bus:
            try:
                bus.bind(("127.0.0.1", port + BUS_OFFSET))
            except OSError:
                continue
        return port
    raise ServerError("found no free port whose cluster bus port (+10000) is free too")
