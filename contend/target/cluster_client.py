"""The Redis Cluster client contend gives implementations: redis-py's RedisCluster, whose
refusal of a command whose keys span hash slots names the command and each key's slot.

redis-py refuses such a command before sending it ("EVALSHA - all keys must map to the
same key slot"), and the server refuses a MULTI/EXEC whose keys span slots (CROSSSLOT);
neither says which keys. `CrossSlotError` does, with how to fix it: a hash tag.
"""

from __future__ import annotations

import threading
from typing import Any

from redis.cluster import RedisCluster
from redis.exceptions import RedisClusterException


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


class SlotCheckingCluster(RedisCluster):
    """RedisCluster whose cross-slot refusals are `CrossSlotError`s naming the keys, and noted."""

    def determine_slot(self, *args: Any) -> int | None:
        try:
            return super().determine_slot(*args)  # type: ignore[no-any-return]
        except RedisClusterException as exc:
            if "same key slot" not in str(exc):
                raise
            error = CrossSlotError(str(args[0]).upper(), self._slots_of(args))
            with _refusals_lock:
                _refusals.append(error)
            raise error from None

    def _slots_of(self, args: tuple[Any, ...]) -> list[tuple[str, int]]:
        command = str(args[0]).upper()
        if command in ("EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"):
            keys = list(args[3 : 3 + int(args[2])])
        else:
            keys = list(self._get_command_keys(*args) or ())
        return [(_text(key), int(self.keyslot(key))) for key in keys]


def _text(key: Any) -> str:
    return key.decode(errors="replace") if isinstance(key, bytes) else str(key)


def pools_of(client: Any) -> list[Any]:
    """The connection pools behind a client: its own, or a cluster client's, one per node."""
    pool = getattr(client, "connection_pool", None)
    if pool is not None:
        return [pool]
    nodes = client.get_nodes() if callable(getattr(client, "get_nodes", None)) else []
    return [n.redis_connection.connection_pool for n in nodes if n.redis_connection is not None]


def disconnect(client: Any) -> Any:
    """Close every connection of a client (a sync one's now; an async one's awaitable is
    returned for its own loop to run)."""
    pools = pools_of(client)
    if len(pools) == 1:
        return pools[0].disconnect()
    for pool in pools:
        pool.disconnect()
    return None
