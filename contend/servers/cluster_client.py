"""The Redis Cluster clients contend gives implementations: redis-py's RedisCluster (and
redis.asyncio's, for async code), whose every refusal because of hash slots is noted, naming the
command and each key with its slot and node (`contend.servers.slot_refusals`).

redis-py refuses a command whose keys span slots before sending it ("EVALSHA - all keys must map
to the same key slot"), and a transaction over two slots (CrossSlotTransactionError); the server
refuses what redis-py let through (CROSSSLOT), a script that touched a key it did not declare
("non local key"), and a multi-key command during a slot's migration (TRYAGAIN). None says which
keys. The clients here refuse the first kind with a `CrossSlotError` that does, and watch every
reply of their connections for the others: an implementation that swallows the error still
leaves the refusal noted.
"""

from __future__ import annotations

import contextlib
import contextvars
import gc
import hashlib
import re
from collections.abc import Callable, Iterator
from typing import Any

import redis.asyncio.cluster
import redis.asyncio.connection
import redis.commands.core
from redis._parsers import AsyncCommandsParser
from redis.cluster import ClusterPipeline, RedisCluster
from redis.exceptions import (
    AskError,
    ClusterCrossSlotError,
    ClusterError,
    CrossSlotTransactionError,
    MovedError,
    RedisClusterException,
    ResponseError,
    TryAgainError,
)

from contend.servers import slot_refusals
from contend.servers.lua_keys import keys_at, refused_line
from contend.servers.slot_refusals import (
    CROSS_SLOT,
    TRYAGAIN,
    UNDECLARED,
    SlotRefusal,
    key_slots,
    refusals_count,
    refusals_since,
    text_of,
)

__all__ = ["CrossSlotError", "refusals_count", "refusals_since"]


class CrossSlotError(RedisClusterException):
    """One command (or script) names keys in different hash slots of a Redis Cluster."""

    def __init__(self, refusal: SlotRefusal) -> None:
        self.refusal = refusal
        self.command = refusal.command
        self.keys = refusal.keys
        super().__init__(str(refusal))


NodeOf = Callable[[int], str]


def _node_finder(holder: Any) -> NodeOf:
    """slot -> the host:port of the master serving it, from a cluster client's (or pipeline's)
    view of the cluster ("" when it does not know)."""

    def node_of(slot: int) -> str:
        with contextlib.suppress(Exception):
            return str(holder.nodes_manager.get_node_from_slot(slot).name)
        return ""

    return node_of


def _refused(command: str, keys: list[Any], node_of: NodeOf) -> CrossSlotError:
    """A CrossSlotError for `command` over `keys` refused by redis-py, noted."""
    return CrossSlotError(slot_refusals.note(SlotRefusal(command.upper(), key_slots(keys, node_of))))


class _SlotChecking:
    """determine_slot whose cross-slot refusal is a CrossSlotError naming the keys, and noted."""

    def determine_slot(self, *args: Any) -> int | None:
        try:
            return super().determine_slot(*args)  # type: ignore[misc,no-any-return]
        except RedisClusterException as exc:
            if "same key slot" not in str(exc):
                raise
            keys = _script_keys(args)
            if keys is None:
                keys = list(self._get_command_keys(*args) or ())  # type: ignore[attr-defined]
            raise _refused(str(args[0]), keys, _node_finder(self)) from None


#: The TRYAGAIN replies met by the command being sent in this context (a list shared with the
#: connections it reads from: a task they run in may have a copy of the context, not this one).
_tryagain: contextvars.ContextVar[list[SlotRefusal] | None] = contextvars.ContextVar(
    "contend_tryagain", default=None
)


@contextlib.contextmanager
def _tryagain_given_up() -> Iterator[None]:
    """Around one command sent by a cluster client (with its retries): the last TRYAGAIN it met
    is noted if redis-py gave up on it (ClusterError: TTL exhausted)."""
    met: list[SlotRefusal] = []
    token = _tryagain.set(met)
    try:
        yield
    except ClusterError:
        if met:
            slot_refusals.note(met[-1])
        raise
    finally:
        _tryagain.reset(token)


class SlotCheckingCluster(_SlotChecking, RedisCluster):
    """RedisCluster whose refusals because of slots, its own and its servers', are noted (its
    own raised as `CrossSlotError`s naming the keys)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        _watch_replies(self)

    def pipeline(self, transaction: Any = None, shard_hint: Any = None) -> Any:
        """redis-py's ClusterPipeline, whose refusal of a transaction (or WATCH) spanning slots
        (CrossSlotTransactionError, raised as is) is noted as a CrossSlotError naming the keys."""
        pipe = super().pipeline(transaction, shard_hint)
        pipe.__class__ = _SlotCheckingPipeline
        return pipe

    def _execute_command(self, target_node: Any, *args: Any, **kwargs: Any) -> Any:
        with _tryagain_given_up():
            return super()._execute_command(target_node, *args, **kwargs)


class _SlotCheckingPipeline(_SlotChecking, ClusterPipeline):
    """ClusterPipeline noting its cross-slot transaction refusals (see SlotCheckingCluster)."""

    #: The WATCH commands since the last reset (redis-py keeps them outside its queue).
    _watched: tuple[tuple[Any, ...], ...] = ()

    def watch(self, *names: Any) -> Any:
        self._watched = (*self._watched, ("WATCH", *names))
        try:
            return super().watch(*names)
        except CrossSlotTransactionError:
            self._note_refusal(self._commands(), "WATCH")
            raise

    def reset(self) -> Any:  # ClusterPipeline.reset empties the pipeline (not RESET the command)
        self._watched = ()
        return super().reset()

    def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().execute_command(*args, **kwargs)
        except CrossSlotTransactionError:
            self._note_refusal([*self._commands(), args], str(args[0]).upper())
            raise

    def execute(self, raise_on_error: bool = True) -> Any:
        commands = self._commands()  # the queue is gone once execute() has failed
        try:
            return super().execute(raise_on_error)
        except CrossSlotTransactionError:
            self._note_refusal(commands, "MULTI/EXEC")
            raise

    def _commands(self) -> list[tuple[Any, ...]]:
        """The WATCH commands so far and the queued commands."""
        return [*self._watched, *(c.args for c in self._execution_strategy.command_queue)]

    def _note_refusal(self, commands: list[tuple[Any, ...]], what: str) -> None:
        keys: list[Any] = []
        for args in commands:
            found = _script_keys(args)
            if found is None:
                with contextlib.suppress(RedisClusterException):
                    found = list(self._get_command_keys(*args) or ())
            keys += [k for k in found or () if k not in keys]
        _refused("WATCH" if what == "WATCH" else "MULTI/EXEC", keys, _node_finder(self))


class SlotCheckingAsyncCluster(redis.asyncio.cluster.RedisCluster):
    """redis.asyncio's RedisCluster whose refusals because of slots are noted with the sync
    client's (its own raised as `CrossSlotError`s naming the keys; commands of one transaction
    in different slots are redis-py's CrossSlotTransactionError, with either client).

    It finds out the cluster's layout before its first command, as the sync client does when it
    is made: redis-py 8.1's sends a first EVAL or EVALSHA, before it knows the layout, to a
    random node, unchecked (a CROSSSLOT from the server, or a MOVED and a second round trip).
    Its nodes' COMMAND table is asked once per process (`_KnownCommands`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands_parser = _KnownCommands()
        _watch_replies(self)

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        if self._initialize:
            await self.initialize()
        return await super().execute_command(*args, **kwargs)

    async def _execute_command(self, target_node: Any, *args: Any, **kwargs: Any) -> Any:
        with _tryagain_given_up():
            return await super()._execute_command(target_node, *args, **kwargs)

    async def _determine_slot(self, command: str, *args: Any) -> int:
        try:
            return await super()._determine_slot(command, *args)
        except RedisClusterException as exc:
            if "same key slot" not in str(exc):
                raise
            keys = _script_keys((command, *args))
            if keys is None:
                keys = list(await self.commands_parser.get_keys(command, *args) or ())
            raise _refused(command, keys, _node_finder(self)) from None


#: The COMMAND table of each node asked so far (host:port -> table): the same for every client
#: of a run, and more than half of what a new async cluster client's discovery costs.
_command_tables: dict[str, Any] = {}


class _KnownCommands(AsyncCommandsParser):
    """AsyncCommandsParser that asks a node for its COMMAND table once per process. A command
    missing from the table (another server at the same address) makes it ask again."""

    async def initialize(self, node: Any = None) -> None:
        if node is not None:
            self.node = node
            known = _command_tables.get(node.name)
            if known is not None:
                self.commands = known
                return
        await super().initialize(node)
        _command_tables[self.node.name] = self.commands


_SCRIPT_COMMANDS = ("EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO")


def _script_keys(args: tuple[Any, ...]) -> list[Any] | None:
    """The KEYS of a script or function call (`args` with the command first); None otherwise."""
    if text_of(args[0]).upper() in _SCRIPT_COMMANDS:
        return list(args[3 : 3 + int(args[2])])
    return None


# Replies the servers refuse -------------------------------------------------------------------
#: Scripts loaded with SCRIPT LOAD so far, by SHA1: what an EVALSHA ran, to read its refused line.
_scripts: dict[str, str] = {}


class _Watch:
    """What a cluster client's connections add: each reply read is paired with the command it
    answers (the commands packed last, in order; a handshake or health check in between is set
    aside), and a refusal because of slots is noted."""

    #: Set on each class made by `_watching`: the client whose view of the cluster names nodes.
    _contend_node_of: NodeOf
    _contend_table: Callable[[], dict[str, Any]]
    _contend_batch: tuple[tuple[Any, ...], ...] | list[tuple[Any, ...]] = ()
    _contend_read = 0
    _contend_queued: list[tuple[Any, ...]] | None = None

    def _contend_packed(self, batch: list[tuple[Any, ...]]) -> None:
        self._contend_batch, self._contend_read = batch, 0
        for args in batch:
            _remember_script(args)

    def pack_command(self, *args: Any) -> Any:
        packed = super().pack_command(*args)  # type: ignore[misc]
        self._contend_packed([args])
        return packed

    def pack_commands(self, commands: Any) -> Any:
        batch = [tuple(c) for c in commands]
        packed = super().pack_commands(batch)  # type: ignore[misc]
        self._contend_packed(batch)  # after: redis.asyncio's packs them one by one
        return packed

    def _contend_answered(self) -> tuple[Any, ...] | None:
        """The command the reply about to be read answers, and where a transaction stands."""
        at = self._contend_read
        self._contend_read = at + 1
        args = self._contend_batch[at] if at < len(self._contend_batch) else None
        name = text_of(args[0]).upper() if args else ""
        if name == "MULTI":
            self._contend_queued = []
        elif name not in ("EXEC", "DISCARD") and self._contend_queued is not None and args:
            self._contend_queued.append(args)
        return args

    def _contend_check(self, args: tuple[Any, ...] | None, reply: Any) -> None:
        queued, name = None, text_of(args[0]).upper() if args else ""
        if name in ("EXEC", "DISCARD"):
            queued, self._contend_queued = self._contend_queued or [], None
        if isinstance(reply, ResponseError):
            _server_refusal(self, args, reply, queued or [])
        elif name == "EXEC" and isinstance(reply, list) and queued:
            for one, answer in zip(queued, reply, strict=False):
                if isinstance(answer, ResponseError):
                    _server_refusal(self, one, answer, [])

    @contextlib.contextmanager
    def _contend_aside(self) -> Any:
        """A handshake or health check sends commands of its own: the batch waits meanwhile."""
        kept = (self._contend_batch, self._contend_read)
        try:
            yield
        finally:
            self._contend_batch, self._contend_read = kept


class _SyncWatch(_Watch):
    def send_command(self, *args: Any, **kwargs: Any) -> Any:  # packs without pack_command
        self._contend_packed([args])
        return super().send_command(*args, **kwargs)  # type: ignore[misc]

    def connect_check_health(self, *args: Any, **kwargs: Any) -> Any:
        with self._contend_aside():
            return super().connect_check_health(*args, **kwargs)  # type: ignore[misc]

    def check_health(self) -> Any:
        with self._contend_aside():
            return super().check_health()  # type: ignore[misc]

    def read_response(self, *args: Any, **kwargs: Any) -> Any:
        answered = self._contend_answered()
        try:
            reply = super().read_response(*args, **kwargs)  # type: ignore[misc]
        except ResponseError as exc:
            self._contend_check(answered, exc)
            raise
        self._contend_check(answered, reply)
        return reply


class _AsyncWatch(_Watch):
    async def connect_check_health(self, *args: Any, **kwargs: Any) -> Any:
        with self._contend_aside():
            return await super().connect_check_health(*args, **kwargs)  # type: ignore[misc]

    async def check_health(self) -> Any:
        with self._contend_aside():
            return await super().check_health()  # type: ignore[misc]

    async def read_response(self, *args: Any, **kwargs: Any) -> Any:
        answered = self._contend_answered()
        try:
            reply = await super().read_response(*args, **kwargs)  # type: ignore[misc]
        except ResponseError as exc:
            self._contend_check(answered, exc)
            raise
        self._contend_check(answered, reply)
        return reply


def _watching(base: type, client: Any) -> type:
    """`base` (a connection class) whose replies are watched for refusals because of slots."""
    if issubclass(base, _Watch):
        return base
    mixin = _AsyncWatch if issubclass(base, redis.asyncio.connection.AbstractConnection) else _SyncWatch
    node_of = _node_finder(client)

    def table() -> dict[str, Any]:
        parser = getattr(client, "commands_parser", None)
        return dict(getattr(parser, "commands", None) or {})

    return type(
        f"SlotWatching{base.__name__}",
        (mixin, base),
        {"_contend_node_of": staticmethod(node_of), "_contend_table": staticmethod(table)},
    )


def _watch_replies(client: Any) -> None:
    """Make every connection of a cluster client, made now or later, watch its replies."""
    nodes = client.nodes_manager
    kwargs = nodes.connection_kwargs
    base = kwargs.get("connection_class") or (
        redis.asyncio.connection.Connection
        if isinstance(client, redis.asyncio.cluster.RedisCluster)
        else redis.connection.Connection
    )
    kwargs["connection_class"] = _watching(base, client)
    for node in [*nodes.nodes_cache.values(), *nodes.startup_nodes.values()]:
        if isinstance(client, redis.asyncio.cluster.RedisCluster):
            node.connection_class = _watching(node.connection_class, client)
            for conn in node._connections:
                conn.__class__ = _watching(type(conn), client)
            continue
        pool = getattr(getattr(node, "redis_connection", None), "connection_pool", None)
        if pool is None:
            continue
        pool.connection_class = _watching(pool.connection_class, client)
        for conn in [*getattr(pool, "_available_connections", ()), *getattr(pool, "_in_use_connections", ())]:
            conn.__class__ = _watching(type(conn), client)


def _remember_script(args: tuple[Any, ...]) -> None:
    if len(args) >= 3 and text_of(args[0]).upper() == "SCRIPT" and text_of(args[1]).upper() == "LOAD":
        source = text_of(args[2])
        _scripts[hashlib.sha1(source.encode()).hexdigest()] = source


def _script_source(args: tuple[Any, ...]) -> str | None:
    """The text of the script a call ran: EVAL's own, or one loaded (or registered) for EVALSHA."""
    name = text_of(args[0]).upper()
    if name.startswith("EVAL") and not name.startswith("EVALSHA"):
        return text_of(args[1])
    sha = text_of(args[1]).lower()
    if sha in _scripts:
        return _scripts[sha]
    # Loaded before this process watched (a warm script cache): redis-py's Script objects know.
    for obj in gc.get_objects():
        scripts = (redis.commands.core.Script, redis.commands.core.AsyncScript)
        if isinstance(obj, scripts) and getattr(obj, "sha", None) == sha:
            _scripts[sha] = text_of(obj.script)
            return _scripts[sha]
    return None


def _node_of_connection(conn: Any) -> str:
    return f"{getattr(conn, 'host', '')}:{getattr(conn, 'port', '')}"


def _server_refusal(
    conn: _Watch, args: tuple[Any, ...] | None, error: ResponseError, queued: list[Any]
) -> None:
    """Note `error`, the server's reply to `args` on `conn`, if it is a refusal because of slots
    (a TRYAGAIN is only noted once redis-py gives up retrying it)."""
    if args is None or isinstance(error, (MovedError, AskError)):
        return
    text = str(error).strip()
    node = _node_of_connection(conn)
    command = text_of(args[0]).upper()
    node_of = conn._contend_node_of
    first = _reason(text)
    if isinstance(error, TryAgainError):
        met = _tryagain.get()
        if met is not None:
            spanned = key_slots(_command_keys(args, conn._contend_table()), node_of)
            met.append(SlotRefusal(command, spanned, TRYAGAIN, f"the server at {node}", first))
        return
    script = "non local key" in text or "do not hash to the same slot" in text
    if not (script or isinstance(error, ClusterCrossSlotError)):
        return
    by = f"the server at {node}"
    declared = _script_keys(args)
    if script and declared is not None:
        slot_refusals.note(_undeclared(command, args, declared, by, first, text, node, node_of))
        return
    keys: list[Any] = []
    for one in queued if command == "EXEC" else [args]:
        keys += [k for k in _command_keys(one, conn._contend_table()) if k not in keys]
    what = "MULTI/EXEC" if command == "EXEC" else command
    slot_refusals.note(SlotRefusal(what, key_slots(keys, node_of), CROSS_SLOT, by, first))


def _reason(text: str) -> str:
    """The server's error without the script's name and position (said apart)."""
    first = text.splitlines()[0] if text else ""
    return re.sub(
        r"Error running script \(call to f_[0-9a-f]+\): |@user_script:\s?\d+:\s?", "", first
    ).strip()


def _undeclared(
    command: str,
    args: tuple[Any, ...],
    declared: list[Any],
    by: str,
    error: str,
    text: str,
    node: str,
    node_of: NodeOf,
) -> SlotRefusal:
    """A script's refusal for touching a key it did not declare, with that key when the line the
    server names can be read."""
    keys = key_slots(declared, node_of)
    argv = [text_of(a) for a in args[3 + len(declared) :]]
    number = refused_line(text)
    source = _script_source(args) if number is not None else None
    line = keys_at(source, number, [k.key for k in keys], argv) if source and number else None
    touched = key_slots([k for k in (line.keys if line else ()) if k not in {d.key for d in keys}], node_of)
    elsewhere = [
        k
        for k in touched
        if (k.node != node if "non local" in text else k.slot not in {d.slot for d in keys})
    ]
    return SlotRefusal(command, keys, UNDECLARED, by, error, line, tuple(elsewhere or touched))


def _command_keys(args: tuple[Any, ...], table: dict[str, Any]) -> list[Any]:
    """The keys of a command, from its arguments and the COMMAND table (no round trip: a
    command with movable keys gives its first argument)."""
    found = _script_keys(args)
    if found is not None:
        return found
    info = table.get(text_of(args[0]).lower())
    if info is None or "movablekeys" in info.get("flags", ()) or not info.get("first_key_pos"):
        return list(args[1:2])
    last = info["last_key_pos"]
    last = len(args) + last if last < 0 else last
    return [
        args[i] for i in range(info["first_key_pos"], min(last, len(args) - 1) + 1, info["step_count"] or 1)
    ]


# Connections -------------------------------------------------------------------------------
def pools_of(client: Any) -> list[Any]:
    """The connection pools behind a client: its own, or a sync cluster client's, one per node
    (none for a redis.asyncio cluster client: its nodes keep their connections themselves)."""
    pool = getattr(client, "connection_pool", None)
    if pool is not None:
        return [pool]
    nodes = client.get_nodes() if callable(getattr(client, "get_nodes", None)) else []
    return [n.redis_connection.connection_pool for n in nodes if getattr(n, "redis_connection", None)]


def disconnect(client: Any) -> Any:
    """Close every connection of a client (a sync one's now; an async one's awaitable is
    returned for its own loop to run: a redis.asyncio cluster client's is its `aclose()`)."""
    if isinstance(client, redis.asyncio.cluster.RedisCluster):
        return client.aclose()
    pools = pools_of(client)
    if len(pools) == 1:
        return pools[0].disconnect()
    for pool in pools:
        pool.disconnect()
    return None
