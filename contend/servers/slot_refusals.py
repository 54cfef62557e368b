"""Commands a Redis Cluster refused because of hash slots, whoever refused them, kept for the
checks: an implementation may catch the error (or take it for a refused acquire), so the checks
read them here (`refusals_since`) and report `cluster-slots` instead of the symptoms.

Three shapes, each named with the command and every key with its slot and the node serving it:

* a command, script or transaction whose keys span slots, refused by redis-py before it is
  sent, or by the server (CROSSSLOT);
* a script that touched a key it did not declare in KEYS, refused by the server when that key
  is on another node ("non local key") or, on Redis 7 and later, in another slot; the key is
  read off the line of the script the server names (`contend.servers.lua_keys`);
* a multi-key command refused with TRYAGAIN (its slot is being migrated, its keys split between
  two nodes) until redis-py gave up: a migration that does not end.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from redis.crc import key_slot

from contend.servers.lua_keys import ScriptLine

CROSS_SLOT, UNDECLARED, TRYAGAIN = "cross-slot", "undeclared", "tryagain"
_ADVICE = (
    "Every key of one command, script or transaction must hash to one slot: give them a shared "
    "hash tag, e.g. {lock}:owner and {lock}:fence"
)


class KeySlot(NamedTuple):
    """A key, its hash slot and the node serving that slot ("" when not known)."""

    key: str
    slot: int
    node: str = ""

    def describe(self) -> str:
        on = f" on {self.node}" if self.node else ""
        return f"{self.key} (slot {self.slot}{on})"


@dataclass(frozen=True)
class SlotRefusal:
    """One refusal: what was refused (`command`), its keys, who refused it and why."""

    command: str
    keys: tuple[KeySlot, ...]
    shape: str = CROSS_SLOT  # CROSS_SLOT, UNDECLARED or TRYAGAIN
    refused_by: str = "redis-py, before sending it"
    #: The server's error, when a server refused it.
    error: str = ""
    #: For a script's undeclared key: the line it was touched at, and the keys named there.
    line: ScriptLine | None = None
    undeclared: tuple[KeySlot, ...] = ()

    def __str__(self) -> str:
        said = f" ({self.error})" if self.error else ""
        if self.shape == TRYAGAIN:
            return (
                f"{self.command} over {_listed(self.keys)} was refused with TRYAGAIN by {self.refused_by}"
                f"{said} until redis-py gave up: the slot was being migrated between nodes, with its keys "
                "split between them, and the migration did not end. A multi-key command cannot run while "
                "its slot is split: finish the migration (CLUSTER SETSLOT ... NODE) or retry after it"
            )
        if self.shape == UNDECLARED:
            where = f"line {self.line.number} of the script ({self.line.text})" if self.line else "the script"
            touched = (
                _listed(self.undeclared)
                if self.undeclared
                else "a key that is not worked out from the script's text"
            )
            return (
                f"{self.command} spans hash slots on a Redis Cluster: the script declared "
                f"{_listed(self.keys) or 'no key'} in KEYS, and {where} touched {touched}, not declared; "
                f"refused by {self.refused_by}{said}. Every key a script touches must be passed in "
                "KEYS, and all of them must hash to one slot: give them a shared hash tag, e.g. "
                "{lock}:owner and {lock}:fence"
            )
        return (
            f"{self.command} spans hash slots on a Redis Cluster: {_listed(self.keys)}; "
            f"refused by {self.refused_by}{said}. {_ADVICE}"
        )


def _listed(keys: Sequence[KeySlot]) -> str:
    return ", ".join(k.describe() for k in keys)


def key_slots(keys: Sequence[Any], node_of: Callable[[int], str]) -> tuple[KeySlot, ...]:
    """Each key (bytes or text, first seen first), with its slot and the node serving it."""
    out: list[KeySlot] = []
    for key in keys:
        text = text_of(key)
        if any(k.key == text for k in out):
            continue
        slot = key_slot(key if isinstance(key, bytes) else str(key).encode())
        out.append(KeySlot(text, slot, node_of(slot)))
    return tuple(out)


def text_of(value: Any) -> str:
    return (
        bytes(value).decode(errors="replace")
        if isinstance(value, (bytes, bytearray, memoryview))
        else str(value)
    )


#: Every refusal so far, in order.
_refusals: list[SlotRefusal] = []
_lock = threading.Lock()


def note(refusal: SlotRefusal) -> SlotRefusal:
    """Keep `refusal` for `refusals_since`."""
    with _lock:
        _refusals.append(refusal)
    return refusal


def refusals_count() -> int:
    """How many refusals there have been (a mark for `refusals_since`)."""
    with _lock:
        return len(_refusals)


def refusals_since(mark: int) -> list[SlotRefusal]:
    """The refusals since `mark`."""
    with _lock:
        return list(_refusals[mark:])
