"""The Redis Cluster clients contend gives implementations: redis-py's RedisCluster (and
redis.asyncio's, for async code), whose refusal of a command whose keys span hash slots
names the command and each key's slot.

redis-py refuses such a command before sending it ("EVALSHA - all keys must map to the
same key slot"), and the server refuses a MULTI/EXEC whose keys span slots (CROSSSLOT);
neither says which keys. `CrossSlotError` does, with how to fix it: a hash tag.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import redis.asyncio.cluster
from redis._parsers import AsyncCommandsParser
from redis.cluster import ClusterPipeline, RedisCluster
from redis.exceptions import CrossSlotTransactionError, RedisClusterException


class CrossSlotError(RedisClusterException):
    """One command (or script) names keys in different hash slots of a Redis Cluster."""

    def __init__(self, command: str, keys: list[tuple[str, int]]) -> None:
        self.command = command
        self.keys = keys
        named = ", ".join(f"{key} (slot {slot})" for key, slot in keys)
        super().__init__(
            f"{command} spans hash slots on a Redis Cluster: {named}. Every key of one command, "
            "script or transaction must hash to one slot: give them a shared hash tag, e.g. "
            "{lock}:owner and {lock}:fence"
        )


#: Every cross-slot refusal so far, in order: an implementation may catch the exception (or take
#: it for a refused acquire), so the checks read them here (`refusals_since`).
_refusals: list[CrossSlotError] = []
_refusals_lock = threading.Lock()


def refusals_count() -> int:
    """How many cross-slot refusals there have been (a mark for `refusals_since`)."""
    with _refusals_lock:
        return len(_refusals)


def refusals_since(mark: int) -> list[CrossSlotError]:
    """The cross-slot refusals since `mark`."""
    with _refusals_lock:
        return list(_refusals[mark:])


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
            raise _refused(str(args[0]), keys, self.keyslot) from None  # type: ignore[attr-defined]


class SlotCheckingCluster(_SlotChecking, RedisCluster):
    """RedisCluster whose cross-slot refusals are `CrossSlotError`s naming the keys, and noted."""

    def pipeline(self, transaction: Any = None, shard_hint: Any = None) -> Any:
        """redis-py's ClusterPipeline, whose refusal of a transaction (or WATCH) spanning slots
        (CrossSlotTransactionError, raised as is) is noted as a CrossSlotError naming the keys."""
        pipe = super().pipeline(transaction, shard_hint)
        pipe.__class__ = _SlotCheckingPipeline
        return pipe


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
        _refused("WATCH" if what == "WATCH" else "MULTI/EXEC", keys, self.keyslot)


class SlotCheckingAsyncCluster(redis.asyncio.cluster.RedisCluster):
    """redis.asyncio's RedisCluster whose cross-slot refusals are `CrossSlotError`s naming the
    keys, noted with the sync client's (each command of a pipeline or transaction too; commands of
    one transaction in different slots are redis-py's CrossSlotTransactionError, with either client).

    It finds out the cluster's layout before its first command, as the sync client does when it
    is made: redis-py 8.1's sends a first EVAL or EVALSHA, before it knows the layout, to a
    random node, unchecked (a CROSSSLOT from the server, or a MOVED and a second round trip).
    Its nodes' COMMAND table is asked once per process (`_KnownCommands`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.commands_parser = _KnownCommands()

    async def execute_command(self, *args: Any, **kwargs: Any) -> Any:
        if self._initialize:
            await self.initialize()
        return await super().execute_command(*args, **kwargs)

    async def _determine_slot(self, command: str, *args: Any) -> int:
        try:
            return await super()._determine_slot(command, *args)
        except RedisClusterException as exc:
            if "same key slot" not in str(exc):
                raise
            keys = _script_keys((command, *args))
            if keys is None:
                keys = list(await self.commands_parser.get_keys(command, *args) or ())
            raise _refused(command, keys, self.keyslot) from None


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


def _script_keys(args: tuple[Any, ...]) -> list[Any] | None:
    """The KEYS of a script or function call (`args` with the command first); None otherwise."""
    if str(args[0]).upper() in ("EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"):
        return list(args[3 : 3 + int(args[2])])
    return None


def _refused(command: str, keys: list[Any], keyslot: Any) -> CrossSlotError:
    """A CrossSlotError for `command` over `keys`, noted for `refusals_since`."""
    error = CrossSlotError(command.upper(), [(_text(key), int(keyslot(key))) for key in keys])
    with _refusals_lock:
        _refusals.append(error)
    return error


def _text(key: Any) -> str:
    return key.decode(errors="replace") if isinstance(key, bytes) else str(key)


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
