"""The one round-trip tap: count what a client sends, and make it crash on a budget.

A round trip is one packed send on a connection: a single command, a pipeline
or a MULTI/EXEC block. `tap(client)` swaps the connection class of the
client's pool, so every connection it makes from then on is counted. A send
counts only once the connection is up: a connection refused before anything
was sent is no round trip (a stress worker then knows its operation cannot
have taken effect). `crash_after(n)` lets n more round trips through and then
raises `SimulatedCrash` on every one after: the client died there.
`pause_after(n)` lets n more round trips through and then holds the next one
until `resume()`: the client stalls between two round trips of an operation.
`commands`, once set to a list, gets the commands of each round trip as they are sent.
`lose_after(n, error)` lets n more round trips through and then loses the reply of the
next one: the server runs it (every reply is read), the connection drops and `error`
(what redis-py raises then: a ConnectionError or TimeoutError) comes out of the read.
A later round trip that sends the same commands again counts as a resend (`resent`).

`watch_servers(ServerWatch(...))` checks every command the process packs against the servers
of the run: one for a server outside it is not sent (`ForeignRoundTrip` in the thread that sent
it), and the first is kept, so the run stops naming the server and the command.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar
from urllib.parse import urlsplit

import redis
import redis.connection

from contend.errors import ContendError
from contend.servers.cluster_client import pools_of
from contend.servers.payload import decode_packed

T = TypeVar("T")


class SimulatedCrash(BaseException):
    """The client died here. A BaseException, so no lock code catches it and carries on."""


class RoundTrips:
    """A client's round trips so far (`sent`), and the crash budget, if any."""

    def __init__(self) -> None:
        self.sent = 0
        self.budget: int | None = None
        self.pause_at: int | None = None
        self.paused = threading.Event()  # set while round trips are held by pause_after
        #: Lose the reply of round trip number `lose_at` (1-based), raising `lose_with` instead.
        self.lose_at: int | None = None
        self.lose_with: Exception | None = None
        self.lost: list[list[Any]] = []  # [server, commands] of each round trip whose reply was lost
        self.resent = 0  # round trips that sent again what a lost one had sent
        #: When a list: the commands of each round trip, as sent (`keep_commands`).
        self.commands: list[list[list[str]]] | None = None
        #: Called once the server has run a round trip whose reply is lost, before the client
        #: sees the error: another client acts in that moment (a waiter takes the freed lock).
        self.on_lost: Callable[[], None] | None = None
        self._resume = threading.Event()
        self._lock = threading.Lock()

    def spend(self) -> None:
        """One round trip is about to go out; SimulatedCrash when the budget is spent."""
        if self.pause_at is not None and self.sent >= self.pause_at:
            self.paused.set()  # every round trip from now on waits (a paused process sends nothing)
            self._resume.wait(30)
        if self.budget is None:
            self.sent += 1
            return
        with self._lock:
            if self.budget is not None:
                if self.budget <= 0:
                    raise SimulatedCrash(f"simulated crash before round trip {self.sent + 1}")
                self.budget -= 1
            self.sent += 1

    def crash_after(self, round_trips: int) -> None:
        """Let `round_trips` more round trips through, then crash on every one after."""
        with self._lock:
            self.budget = round_trips

    def pause_after(self, round_trips: int) -> None:
        """Let `round_trips` more round trips through, then hold every one after until `resume()`
        (`paused` is set once one waits; they go on by themselves after 30 s). The client's
        background threads (a lease renewer) are held too: the whole process is paused."""
        self._resume.clear()
        self.pause_at = self.sent + round_trips

    def lose_after(self, round_trips: int, error: Exception) -> None:
        """Let `round_trips` more round trips through, then lose the next one's reply (`error`)."""
        self.lose_at = self.sent + round_trips + 1
        self.lose_with = error

    def resume(self) -> None:
        self.pause_at = None
        self.paused.clear()
        self._resume.set()


def tap(client: redis.Redis, trips: RoundTrips | None = None) -> RoundTrips:
    """Count (and make crashable) every round trip of `client`'s future connections; with
    `trips`, on that counter (one counter over several clients: Redlock's masters).

    A cluster client's nodes each have a pool; a node it meets later (a replica promoted, a
    slot moved to a node it had not used) gets a tapped pool too."""
    trips = trips or RoundTrips()
    tapped: dict[type, type] = {}

    def tapped_class(base: Any) -> type:
        if base not in tapped:

            def send_packed_command(self: Any, command: Any, check_health: bool = True) -> None:
                self.connect()  # a refused connection raises here, before anything is counted as sent
                trips.spend()
                keep = trips.commands is not None
                commands = decode_packed(command) if trips.lost or trips.lose_at or keep else []
                if trips.commands is not None:
                    trips.commands.append(commands)
                where = f"{getattr(self, 'host', '')}:{getattr(self, 'port', '')}"
                if trips.lost and [where, commands] == trips.lost[-1]:
                    trips.resent += 1  # the same commands to the same server again
                base.send_packed_command(self, command, check_health)
                if trips.lose_at is not None and trips.sent == trips.lose_at:
                    trips.lose_at = None
                    trips.lost.append([where, commands])
                    self._contend_lose = (trips.lose_with, len(commands))

            def read_response(self: Any, *args: Any, **kwargs: Any) -> Any:
                lose = getattr(self, "_contend_lose", None)
                if lose is None:
                    return base.read_response(self, *args, **kwargs)
                self._contend_lose = None
                error, replies = lose
                for _ in range(max(1, replies)):  # the server has run every command of it
                    with contextlib.suppress(redis.ResponseError):
                        base.read_response(self, *args, **kwargs)
                self.disconnect()
                if trips.on_lost is not None:
                    trips.on_lost()
                raise error

            tapped[base] = type(
                f"Tapped{base.__name__}",
                (base,),
                {"send_packed_command": send_packed_command, "read_response": read_response},
            )
        return tapped[base]

    for pool in pools_of(client):  # a cluster client has one per node
        pool.connection_class = tapped_class(pool.connection_class)
        pool.contend_round_trips = trips
    nodes = getattr(client, "nodes_manager", None)
    if nodes is not None:
        kwargs = nodes.connection_kwargs
        kwargs["connection_class"] = tapped_class(kwargs.get("connection_class", redis.Connection))
    return trips


def round_trips(client: redis.Redis) -> int:
    """Round trips a tapped `client` has sent so far (0 for one that is not tapped)."""
    pools = pools_of(client)
    trips = getattr(pools[0], "contend_round_trips", None) if pools else None
    return trips.sent if trips is not None else 0


# The servers a run includes ------------------------------------------------------------------
class ForeignRoundTrip(BaseException):
    """The code under test was about to send a command to a server the run does not include; the
    command was not sent. A BaseException: no lock code catches it and carries on."""

    def __init__(self, server: str, command: str) -> None:
        self.server = server
        self.command = command
        super().__init__(
            f"the code under test tried to send {command} to {server}, a server this run does not "
            "include; contend did not send it and stopped: it runs the schedule, virtual time and "
            "cleanup only on the servers it is given, so it gives no verdict. Include that server "
            "in the run (--masters N for embedded independent masters, or --redis-url once per "
            "server), or have the implementation use only the clients it is given"
        )


class ForeignServer(ContendError):
    """A run stopped because the code under test reached a server outside it (exit 2, no verdict)."""


#: Where contend's offline probes point the clients they build objects with (port 1 of the
#: loopback: nothing listens there, so a factory that talks while building reaches no one).
NOWHERE = "127.0.0.1:1"


class ServerWatch:
    """The servers of a run (host:port, or a unix socket's path): the target's, the other ones it
    lists (`Target.also`), and on a Redis Cluster every node the cluster reports, now or later."""

    def __init__(self, urls: Iterable[str], cluster_url: str | None = None) -> None:
        self.known = {server for url in urls if (server := server_of_url(url))}
        self.cluster_url = cluster_url
        #: The first round trip to a server outside the run: (server, command), once it happened.
        self.first: ForeignRoundTrip | None = None
        self._lock = threading.Lock()
        if cluster_url:
            self.known |= _cluster_nodes(cluster_url)

    @classmethod
    def of(cls, target: Any) -> ServerWatch:
        """The servers of a run's Target: its own (every node of a cluster) and `also`."""
        if target.cluster:
            return cls(target.also, cluster_url=target.url)
        return cls([target.url, *target.also])

    def includes(self, server: str) -> bool:
        if not server or server in self.known or server == NOWHERE:
            return True
        if self.cluster_url:  # a node the cluster gained since (a replica promoted, a node added)
            with _asking():
                self.known |= _cluster_nodes(self.cluster_url)
        return server in self.known

    def refuse(self, server: str, commands: Iterable[tuple[Any, ...]]) -> ForeignRoundTrip:
        shown = "; ".join(_shown(args) for args in commands)
        refused = ForeignRoundTrip(server, shown)
        with self._lock:
            if self.first is None:
                self.first = refused
        return refused


_watch: ServerWatch | None = None
_watch_lock = threading.Lock()
_local = threading.local()


@contextlib.contextmanager
def _asking() -> Iterator[None]:
    """contend's own look-up of a cluster's nodes: not checked."""
    _local.asking = True
    try:
        yield
    finally:
        _local.asking = False


def _check(conn: Any, commands: list[tuple[Any, ...]]) -> None:
    watch = _watch
    if watch is None or getattr(_local, "asking", False):
        return
    if getattr(conn, "_contend_included", None) is watch:
        return
    server = server_of(conn)
    if watch.includes(server):
        conn._contend_included = watch
        return
    if all(_name(args) in HANDSHAKE for args in commands):
        return  # a connection saying hello (redis-py connects before the first command): no data
    raise watch.refuse(server, commands)


def _unreachable(conn: Any, error: BaseException) -> None:
    """A connection to a server outside the run failed: ForeignRoundTrip, as its first command
    would have had."""
    watch = _watch
    if watch is None or getattr(_local, "asking", False):
        return
    server = server_of(conn)
    if not watch.includes(server):
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        raise watch.refuse(server, [(f"a command (it could not connect: {reason})",)]) from error


#: What a connection sends before any command of the code under test: no data read or written.
HANDSHAKE = frozenset({"HELLO", "AUTH", "CLIENT", "SELECT", "READONLY", "PING"})


def _name(args: tuple[Any, ...]) -> str:
    first = args[0] if args else b""
    return (first.decode(errors="replace") if isinstance(first, bytes) else str(first)).upper()


@contextlib.contextmanager
def watch_servers(watch: ServerWatch) -> Iterator[ServerWatch]:
    """While inside, a command packed for a server `watch` does not include raises
    ForeignRoundTrip in the thread that sends it, and is kept as `watch.first`."""
    global _watch
    with _watch_lock:
        outer = _watch
        if outer is None:
            _patch()
            _watch = watch
    if outer is not None:  # nested (a check inside a battery): the outer one holds
        yield outer
        return
    try:
        yield watch
    finally:
        with _watch_lock:
            _watch = None
            _unpatch()


def watching_servers(run: Callable[..., T]) -> Callable[..., T]:
    """`run(..., target, ...)` (its parameter named `target`, a Target) while every command the
    process packs is checked against the target's servers (`watch_servers`): one for another
    server is not sent, and `run` ends with a ForeignServer error (exit 2) naming the server and
    the command, whatever it made of the ForeignRoundTrip."""
    signature = inspect.signature(run)

    @functools.wraps(run)
    def watched(*args: Any, **kwargs: Any) -> T:
        target = signature.bind(*args, **kwargs).arguments["target"]
        with watch_servers(ServerWatch.of(target)):
            try:
                done = run(*args, **kwargs)
            except ForeignRoundTrip as exc:  # from a capability probe, say
                raise ForeignServer(str(exc)) from None
            if (foreign := foreign_round_trip()) is not None:
                raise ForeignServer(str(foreign))
            return done

    return watched


def foreign_round_trip() -> ForeignRoundTrip | None:
    """The first round trip to a server outside the run being watched, if there was one."""
    watch = _watch
    return watch.first if watch is not None else None


_originals: dict[tuple[type, str], Any] = {}


def _patch() -> None:
    import redis.asyncio.connection

    def packs_one(original: Any) -> Any:
        def pack(self: Any, *args: Any, **kwargs: Any) -> Any:
            _check(self, [args])
            return original(self, *args, **kwargs)

        return pack

    def packs_many(original: Any) -> Any:
        def pack(self: Any, commands: Any) -> Any:
            commands = [tuple(c) for c in commands]
            _check(self, commands)
            return original(self, commands)

        return pack

    # redis-py connects before it packs the first command: a server outside the run that cannot
    # be reached never sees a command, and the code under test would see a ConnectionError.
    def connects(original: Any) -> Any:
        def connect(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return original(self, *args, **kwargs)
            except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
                _unreachable(self, exc)
                raise

        return connect

    def connects_async(original: Any) -> Any:
        async def connect(self: Any, *args: Any, **kwargs: Any) -> Any:
            try:
                return await original(self, *args, **kwargs)
            except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
                _unreachable(self, exc)
                raise

        return connect

    sync_cls = redis.connection.AbstractConnection
    async_cls = redis.asyncio.connection.AbstractConnection
    for holder, name, wrap in (
        (sync_cls, "pack_command", packs_one),
        (sync_cls, "send_command", packs_one),  # packs without pack_command
        (sync_cls, "pack_commands", packs_many),
        (sync_cls, "connect_check_health", connects),
        (async_cls, "pack_command", packs_one),
        (async_cls, "pack_commands", packs_many),
        (async_cls, "connect_check_health", connects_async),
    ):
        _originals[holder, name] = original = vars(holder)[name]
        setattr(holder, name, wrap(original))


def _unpatch() -> None:
    for (holder, name), original in _originals.items():
        setattr(holder, name, original)
    _originals.clear()


def server_of(conn: Any) -> str:
    """host:port of a connection's server (its IP address when it names a host), or the path of
    its unix socket."""
    path = getattr(conn, "path", None)
    if path:
        return str(path)
    port = getattr(conn, "port", None)
    return f"{_address(str(getattr(conn, 'host', '')))}:{port}" if port else ""


def server_of_url(url: str) -> str:
    """What `server_of` says of the connections to the server at `url` ("" for a redis+sentinel://
    URL: its servers are found through the Sentinels)."""
    parts = urlsplit(url)
    if parts.scheme == "unix":
        return parts.path
    if parts.scheme.endswith("sentinel"):
        return ""
    return f"{_address(parts.hostname or 'localhost')}:{parts.port or 6379}"


@functools.cache
def _address(host: str) -> str:
    try:
        return socket.gethostbyname(host)
    except OSError:
        return host


def _cluster_nodes(url: str) -> set[str]:
    """host:port of every node a Redis Cluster lists (CLUSTER NODES on the node `url` names)."""
    node = redis.Redis.from_url("redis://" + url.split("://", 1)[1], socket_connect_timeout=5)
    try:
        listed = node.execute_command("CLUSTER NODES")
    except redis.RedisError:
        return set()
    finally:
        node.close()
    # redis-py parses the reply into {"host:port": ...}; the raw text has "id host:port@bus ..."
    if isinstance(listed, dict):
        addresses = [str(a) for a in listed]
    else:
        text = listed.decode() if isinstance(listed, bytes) else str(listed)
        addresses = [f[1] for f in (line.split() for line in text.splitlines()) if len(f) > 1]
    found = set()
    for address in addresses:
        host, _, port = address.split("@")[0].rpartition(":")
        if port:
            found.add(f"{_address(host or '127.0.0.1')}:{port}")
    return found


def _shown(args: tuple[Any, ...], limit: int = 120) -> str:
    text = " ".join(a.decode(errors="replace") if isinstance(a, bytes) else str(a) for a in args)
    return text if len(text) <= limit else text[: limit - 1] + "…"
