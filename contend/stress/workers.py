"""What stress workers do: each family's operations, and how they are recorded.

A worker is one OS process with connections of its own. It performs operations
in a loop and records each (Jepsen's convention: `invoke`, then `ok`, `fail` or
`info`) as a JSON line in a file of its own, stamped with time.monotonic_ns()
(system-wide on Linux, so comparable across processes). An operation whose
outcome the worker cannot know (a lost connection, a timeout) ends in `info`,
and the worker carries on under a new process id. One that raised before any
of its commands reached the server (connection refused) ends in `fail`: it
cannot have taken effect.

registry  register the next name of a sequence all workers walk (so they meet on
          each new name), look up and re-register recent names, reverse ids.
lock      acquire (single attempts, each an operation, polled with backoff), hold
          for `hold_ms`, increment a counter the lock protects (read, then write:
          through FencedResource with the fencing token when the lock has one),
          release.
transaction  transfers between three accounts and audits of them, each operation
          marked in the server's MONITOR stream (contend.stress.bank_worker).

The implementation is a catalog one (`WorkerSpec.impl` is its name) or the
user's `package.module:factory` (`WorkerSpec.code`, its spec as the parent parsed
it): each worker takes it through the one door (`contend.subject.resolve.load`).
Workers are spawned with the parent's sys.path and current directory
(multiprocessing's "spawn" carries both), and the loader adds the current
directory as `contend check` does, so a factory that imported in the parent
imports in every worker.

The parent sees each worker's phase and counters on a shared `Board`
(`contend.stress.board`), which is also how it tells workers to start, to
stop, and where the server is now.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from contend.history.records import UNSENT
from contend.impl.catalog import Implementation
from contend.impl.locks.errors import LockNotOwnedError, StaleFencingTokenError
from contend.impl.locks.fenced import FencedResource
from contend.impl.registry.base import RegistrationError
from contend.servers.cluster_client import SlotCheckingCluster
from contend.servers.tap import tap
from contend.servers.urls import is_cluster_url, is_sentinel_url, node_url, sentinel_master
from contend.stress.board import Board, Field, WorkerPhase
from contend.stress.masters import master_clients
from contend.subject.protocols import TOKEN_ATTRIBUTE, fencing_token, granted
from contend.subject.spec import SubjectSpec

#: Families `contend stress` can drive.
FAMILIES = ("registry", "lock", "transaction")

#: Seconds a worker waits after an operation ended in info (a lost connection) before the next.
RECONNECT_PAUSE = 0.05

#: Registry names live in a window behind each worker's next new name.
RECENT = 32

# --------------------------------------------------------------------------- the worker


@dataclass(frozen=True)
class WorkerSpec:
    """Everything a worker process needs (picklable: workers may be spawned)."""

    index: int
    procs: int
    #: A catalog name, or `package.module:factory` when `kind` is set.
    impl: str
    namespace: str
    path: str
    duration: float
    ttl_ms: int
    hold_ms: float
    op_timeout: float
    seed: int
    parent_pid: int
    #: The family of a user's implementation (`--kind`); None: `impl` is a catalog name.
    kind: str | None = None
    #: Where a lock's fencing token comes from (protocols.TOKEN_RETURNED / TOKEN_ATTRIBUTE);
    #: None: writes go straight to the counter.
    fencing: str | None = None
    #: With --masters: the URLs of the lock's masters (`impl` names a MULTI_MASTER_LOCKS entry, or the
    #: user's factory taking the list of their clients).
    master_urls: tuple[str, ...] = ()
    #: The user's code as the parent parsed it (None: `impl` is a catalog name): each worker
    #: takes it through the same door (contend.subject.resolve.load).
    code: SubjectSpec | None = None


def connect(url: str, op_timeout: float) -> redis.Redis:
    """A worker's client: bounded waits, and no automatic resend, so a lost reply surfaces as info.

    On a Redis Cluster (redis+cluster://) a RedisCluster client, which still follows MOVED and
    ASK (the command was refused, not run) but resends nothing after a lost connection. Through
    Sentinel (redis+sentinel://) a client that asks the Sentinels for the master on every new
    connection, so after a failover it finds the new one."""
    if is_sentinel_url(url):
        return sentinel_master(
            url,
            socket_timeout=op_timeout,
            socket_connect_timeout=op_timeout,
            retry=Retry(NoBackoff(), 0),
            retry_on_timeout=False,
        )
    if is_cluster_url(url):
        return SlotCheckingCluster.from_url(  # type: ignore[return-value]
            node_url(url),
            socket_timeout=op_timeout,
            socket_connect_timeout=op_timeout,
            retry=Retry(NoBackoff(), 0),
        )
    return redis.Redis.from_url(
        url,
        socket_timeout=op_timeout,
        socket_connect_timeout=op_timeout,
        retry=Retry(NoBackoff(), 0),
        retry_on_timeout=False,
    )


def workload_key(namespace: str, name: str, url: str) -> str:
    """The key of the lock workload's `name` under the run namespace: on a Redis Cluster a whole
    hash tag, so what an implementation derives from it (`{key}:fence`) shares its slot."""
    key = f"{namespace}:{name}"
    return "{" + key + "}" if is_cluster_url(url) else key


class Worker:
    """Records operations to its file; subclasses write `step`."""

    #: Exceptions that mean "definitely did not take effect" (recorded as fail).
    definite: tuple[type[BaseException], ...] = ()

    def __init__(self, spec: WorkerSpec, board: Board, factory: Callable[..., Any]) -> None:
        self.spec = spec
        self.board = board
        self.factory = factory
        self.index = spec.index
        self.process = spec.index
        self.rng = random.Random(spec.seed * 1_000_003 + spec.index)
        self.fd = os.open(spec.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.generation = board.generation
        self.deadline = 0  # monotonic ns; set when the run starts
        self.client = connect(board.url, spec.op_timeout)
        # Round trips that reached a connected socket: an operation with none cannot have taken effect.
        self.trips = tap(self.client)
        board.set(self.index, Field.PROCESS, self.process)
        self.setup()

    def setup(self) -> None:
        """Build the implementation's objects on `self.client`."""

    def step(self) -> None:
        raise NotImplementedError

    def follow_server(self) -> None:
        """After a failover, talk to the new primary."""
        if self.board.generation != self.generation:
            self.generation = self.board.generation
            with contextlib.suppress(Exception):
                self.client.close()
            self.client = connect(self.board.url, self.spec.op_timeout)
            self.trips = tap(self.client)
            self.setup()

    def record(self, kind: str, f: str, key: Any, value: Any, error: Any = None) -> None:
        doc: dict[str, Any] = {"process": self.process, "type": kind, "f": f, "key": key, "value": value}
        if error is not None:
            doc["error"] = error
        doc["time"] = time.monotonic_ns()
        os.write(self.fd, (json.dumps(doc, separators=(",", ":")) + "\n").encode())

    def op(self, f: str, key: Any, value: Any, action: Callable[[], Any]) -> tuple[str, Any]:
        """Invoke, run `action`, complete: (ok, output), (fail, None) or (info, None).

        fail: a definite error of the implementation, or nothing was sent to the
        server (a refused connection). info: anything else that raised.
        """
        self.record("invoke", f, key, value)
        sent = self.trips.sent
        try:
            output = action()
        except Ambiguous as exc:
            # It returned, but what it did is unknown: info, and this worker goes on as a new
            # process at once (it was not cut off from the server, so it need not pause).
            self.record("info", f, key, value, str(exc))
            self.board.add(self.index, Field.INFO)
            self.process += self.spec.procs
            self.board.set(self.index, Field.PROCESS, self.process)
            return "info", None
        except self.definite as exc:
            self.record("fail", f, key, value, _error(exc))
            self.board.add(self.index, Field.FAIL)
            return "fail", None
        except Exception as exc:
            if self.trips.sent == sent:
                self.record("fail", f, key, value, UNSENT + _error(exc))
                self.board.add(self.index, Field.FAIL)
                if isinstance(exc, redis.ConnectionError):
                    self.pause(RECONNECT_PAUSE)  # the server is down: do not spin
                return "fail", None
            self.record("info", f, key, value, _error(exc))
            self.board.add(self.index, Field.INFO)
            self.crashed()
            return "info", None
        self.record("ok", f, key, output)
        self.board.add(self.index, Field.OK)
        return "ok", output

    def pause(self, seconds: float) -> None:
        """Sleep, but not past the run's end."""
        left = (self.deadline - time.monotonic_ns()) / 1e9
        time.sleep(max(0.0, min(seconds, left)))

    def crashed(self) -> None:
        """Jepsen's rule: after an info, this worker goes on as a new process, after a pause.

        The pause keeps a server that is down (connection refused at once) from
        filling the history with thousands of info operations, each of which
        the checker must consider as maybe having taken effect.
        """
        self.process += self.spec.procs
        self.board.set(self.index, Field.PROCESS, self.process)
        self.pause(RECONNECT_PAUSE)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.client.close()
        with contextlib.suppress(OSError):
            os.close(self.fd)


class Ambiguous(Exception):
    """An operation returned normally, but its outcome is not known (recorded as info)."""


def _error(exc: BaseException) -> str:
    text = str(exc).splitlines()[0] if str(exc) else ""
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class RegistryWorker(Worker):
    """register / lookup / reverse on names all workers walk through together."""

    definite = (RegistrationError, ValueError)

    def setup(self) -> None:
        self._close_registry()
        self.registry = self.factory(self.client, self.spec.namespace)
        if not hasattr(self, "next_name"):
            self.next_name = 0

    def _close_registry(self) -> None:
        closer = getattr(getattr(self, "registry", None), "close", None)
        if callable(closer):
            with contextlib.suppress(Exception):
                closer()

    def step(self) -> None:
        self.board.set(self.index, Field.PHASE, WorkerPhase.BUSY)
        r = self.rng.random()
        k = self.next_name
        if r < 0.55 or k == 0:
            name = f"n{k}"
            self.next_name += 1
            self.op("register", None, name, lambda: int(self.registry.register(name)))
        elif r < 0.80:
            name = f"n{self.rng.randrange(max(0, k - RECENT), k)}"
            self.op("lookup", None, name, lambda: _int_or_none(self.registry.lookup(name)))
        elif r < 0.92:
            name = f"n{self.rng.randrange(max(0, k - RECENT), k)}"
            self.op("register", None, name, lambda: int(self.registry.register(name)))
        else:
            ident = self.rng.randint(1, k)
            self.op("reverse", None, ident, lambda: _str_or_none(self.registry.reverse(ident)))
        self.board.set(self.index, Field.PHASE, WorkerPhase.IDLE)

    def close(self) -> None:
        self._close_registry()
        super().close()


def _int_or_none(v: Any) -> int | None:
    return None if v is None else int(v)


def _str_or_none(v: Any) -> str | None:
    if v is None:
        return None
    return v.decode() if isinstance(v, bytes) else str(v)


#: Keys of the lock workload, under the run namespace; the history names them by the short form.
LOCK_KEY = "lock"
COUNTER_KEY = "counter"


class LockWorker(Worker):
    """acquire → hold → increment the protected counter → release, over and over."""

    definite = (StaleFencingTokenError,)

    def setup(self) -> None:
        self.fenced = self.spec.fencing is not None
        self.lock_key = workload_key(self.spec.namespace, LOCK_KEY, self.board.url)
        self.counter_key = workload_key(self.spec.namespace, COUNTER_KEY, self.board.url)
        self.resource = FencedResource(self.client, self.counter_key) if self.fenced else None
        self.acquire_timeout = acquire_timeout(self.spec.ttl_ms)
        self.acquired_at = 0  # monotonic ns: the invocation of the last acquire attempt
        if self.spec.master_urls and not hasattr(self, "masters"):
            # Redlock: the lock's own masters (the counter stays on self.client's server); their
            # round trips count as this worker's, and the partition nemesis can cut them.
            self.masters = master_clients(
                self.spec.master_urls,
                self.board,
                self.index,
                lambda url: _tapped(connect(url, self.spec.op_timeout), self.trips),
            )

    def new_lock(self) -> Any:
        """A lock object for one acquire-write-release round: on the server, or over the masters."""
        if self.spec.master_urls:
            return self.factory(self.masters, self.lock_key, self.spec.ttl_ms)
        return self.factory(self.client, self.lock_key, self.spec.ttl_ms)

    def close(self) -> None:
        for client in getattr(self, "masters", ()):
            with contextlib.suppress(Exception):
                client.close()
        super().close()

    def step(self) -> None:
        lock = self.new_lock()
        got = self._acquire(lock)
        if got is None:
            self.board.set(self.index, Field.PHASE, WorkerPhase.IDLE)
            return
        if self.fenced and isinstance(got, bool):
            # A fenced lock that granted without a token: a write without one would bypass the
            # resource's fence, so this holder only releases.
            self._release_op(lock)
            self.board.set(self.index, Field.PHASE, WorkerPhase.IDLE)
            return
        # While WorkerPhase.HOLDING the nemesis may stop this process: the write below is the one that matters.
        self.board.set(self.index, Field.PHASE, WorkerPhase.HOLDING)
        time.sleep(self.spec.hold_ms / 1000)
        if _validity_over(lock):
            # Redlock tells its holder how long the lock is surely held (`valid_until`); a holder
            # that knows it ran out does not write, as the algorithm asks.
            self._release_op(lock)
            self.board.set(self.index, Field.PHASE, WorkerPhase.IDLE)
            return
        self.board.set(self.index, Field.PHASE, WorkerPhase.WRITING)
        token = got if self.fenced else None
        status, _ = self.op(
            "incr", COUNTER_KEY, None if token is None else {"token": token}, lambda: self._incr(token)
        )
        if status == "ok":
            self.board.add(self.index, Field.WRITES)
        if status != "info":
            self._release_op(lock)
        self.board.set(self.index, Field.PHASE, WorkerPhase.IDLE)

    def _release_op(self, lock: Any) -> None:
        self.board.set(self.index, Field.PHASE, WorkerPhase.RELEASING)
        self.op("release", LOCK_KEY, None, lambda: self._release(lock))

    def _acquire(self, lock: Any) -> bool | int | None:
        """Poll single attempts, each recorded as its own acquire, with jittered backoff.

        One attempt per operation keeps the model exact (False: held at that
        moment) and lets an attempt refused at connect be a fail, not an info.
        Returns True or the fencing token once acquired; None on giving up.
        """
        self.board.set(self.index, Field.PHASE, WorkerPhase.ACQUIRING)
        give_up = min(self.deadline, time.monotonic_ns() + int(self.acquire_timeout * 1e9))
        wait = 0.005
        while True:
            self.acquired_at = time.monotonic_ns()  # the lease of a grant starts after this
            status, got = self.op("acquire", LOCK_KEY, None, lambda: self._attempt(lock))
            if status == "info":
                return None
            if status == "ok" and got is not False:
                return got  # type: ignore[no-any-return]
            if time.monotonic_ns() >= give_up or self.board.stopped:
                return None
            self.pause(self.rng.uniform(wait / 2, wait))
            wait = min(wait * 2, 0.05)

    def _attempt(self, lock: Any) -> bool | int:
        """One non-blocking acquire: False, True, or the fencing token of a fenced lock's grant."""
        acquired = lock.acquire(blocking=False)
        if not granted(acquired):
            return False
        if self.fenced:
            token = fencing_token(lock, acquired, self.spec.fencing)
            return True if token is None else token
        return True

    def _incr(self, token: int | None) -> int:
        if self.resource is not None and token is not None:
            value = int(self.resource.read() or 0) + 1
            self.resource.write(token, value)
            return value
        value = int(self.client.get(self.counter_key) or 0) + 1
        self.client.set(self.counter_key, value)
        return value

    def _release(self, lock: Any) -> str:
        """'ok', or 'not-owner' for a refusal: LockNotOwnedError, and for a user's lock (whose
        protocol lets a refusal raise anything or return False) False or any exception that is
        not a Redis error (a lost connection stays info).

        A user's lock may also refuse by returning normally, so a normal return is 'ok' only when
        the lease was surely still held (the release returned within 90% of the TTL of the
        acquire's invocation); later it is Ambiguous (info): released, or refused after expiry."""
        try:
            released = lock.release()
        except LockNotOwnedError:
            return "not-owner"
        except Exception as exc:
            refused = isinstance(exc, redis.exceptions.LockError) or not isinstance(exc, redis.RedisError)
            if self.spec.kind is None or not refused:
                raise
            return "not-owner"
        if self.spec.kind is not None and released is False:
            return "not-owner"
        if (
            self.spec.kind is not None
            and time.monotonic_ns() - self.acquired_at >= self.spec.ttl_ms * 900_000
        ):
            raise Ambiguous(
                "release returned normally once the lease may have expired: released or refused (the "
                "protocol allows a refusal to return normally)"
            )
        return "ok"


def _validity_over(lock: Any) -> bool:
    """Has a lock that says until when it is surely held (`valid_until`, monotonic seconds, as
    contend's Redlock does) run past it?"""
    until = getattr(lock, "valid_until", None)
    return isinstance(until, float) and time.monotonic() >= until


def _tapped(client: redis.Redis, trips: Any) -> redis.Redis:
    tap(client, trips)
    return client


def acquire_timeout(ttl_ms: int) -> float:
    """How long a worker's blocking acquire waits: past one lease that is never released."""
    return 2 * ttl_ms / 1000 + 0.5


def is_fenced(impl: Implementation) -> bool:
    """Does the catalog lock hand out fencing tokens (so the counter goes through FencedResource)?"""
    return impl.model == "fenced-lease"


def catalog_fencing(impl: Implementation) -> str | None:
    """Where a catalog lock's fencing token comes from: its `fencing_token` attribute, or None."""
    return TOKEN_ATTRIBUTE if impl.family == "lock" and is_fenced(impl) else None
