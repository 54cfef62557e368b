"""A key-value store: get / put / append per key, checked one key at a time.

append concatenates strings (Porcupine's kv histories) or appends an element
to a tuple (Elle's list-append). A missing key reads as nil, or as the empty
string (Porcupine's convention).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from contend.models.base import UNKNOWN, DeterministicModel, Op, freeze, partition_by_key

KvState = tuple[tuple[Any, Any], ...]
ALIASES = {"read": "get", "write": "put", "set": "put"}


class KvModel(DeterministicModel[KvState]):
    """State: (key, value) pairs in first-write order; a partition by key keeps it one pair long."""

    name = "kv"

    def init(self) -> KvState:
        return ()

    def apply(self, state: KvState, f: str, value: Any) -> tuple[Any, KvState]:
        key, arg = value
        current = _get(state, key)
        if f == "get":
            return current, state
        if f == "put":
            return None, _put(state, key, arg)
        if f == "append":
            return None, _put(state, key, _append(current, arg))
        raise ValueError(f"kv has no operation {f!r} (expected get, put or append)")

    def step(self, state: KvState, op: Op) -> tuple[bool, KvState]:
        expected, nxt = self.apply(state, op.f, (op.key, op.value))
        out = op.output
        return (out is UNKNOWN or out == expected or (expected is None and out == "")), nxt

    def compile_step(self, op: Op) -> Callable[[KvState], tuple[bool, KvState]]:
        """`step` specialised to one operation."""
        f, key, arg, out = op.f, op.key, op.value, op.output
        if f == "get":
            if out is UNKNOWN:
                return lambda s: (True, s)
            if out == "":
                return lambda s: (_get(s, key) in (None, ""), s)
            return lambda s: (_get(s, key) == out, s)
        if f == "put":
            return lambda s: (True, _put(s, key, arg))
        if f == "append":
            return lambda s: (True, _put(s, key, _append(_get(s, key), arg)))
        raise ValueError(f"kv has no operation {f!r} (expected get, put or append)")

    def adapt(self, op: Op) -> Op:
        """Normalise Jepsen's encodings: [k v] tuples of independent keys, echoed put/append values."""
        f = ALIASES.get(op.f, op.f)
        key, value, output = op.key, op.value, op.output
        if key is None and isinstance(value, list | tuple) and len(value) == 2:
            key, value = value[0], value[1]
            if output is not UNKNOWN and isinstance(output, list | tuple) and len(output) == 2:
                output = output[1]
        if f not in ("get", "put", "append"):
            raise ValueError(f"kv has no operation {op.f!r} (expected get, put or append)")
        if f == "get":
            return Op(f, None, output if output is UNKNOWN else freeze(output), freeze(key), op.process)
        return Op(f, freeze(value), output if output is UNKNOWN else None, freeze(key), op.process)

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return partition_by_key(ops)

    def describe_state(self, state: KvState) -> str:
        return "{" + ", ".join(f"{k!r}: {v!r}" for k, v in state) + "}"


def _get(state: KvState, key: Any) -> Any:
    for k, v in state:
        if k == key:
            return v
    return None


def _put(state: KvState, key: Any, value: Any) -> KvState:
    for i, (k, _) in enumerate(state):
        if k == key:
            return (*state[:i], (key, value), *state[i + 1 :])
    return (*state, (key, value))


def _append(current: Any, arg: Any) -> Any:
    if isinstance(arg, str) and (current is None or isinstance(current, str)):
        return (current or "") + arg
    if current is None:
        return (arg,)
    if isinstance(current, tuple):
        return (*current, arg)
    raise ValueError(f"cannot append {arg!r} to {current!r}")
