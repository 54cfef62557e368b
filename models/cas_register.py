"""The compare-and-set register of the linearizability literature (Knossos, Porcupine).

Operations: read() → value, write(v), cas((old, new)) → True when the value
was `old` (it becomes `new`), False otherwise. A register per key: histories
with keys are checked one key at a time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from contend.models.base import UNKNOWN, DeterministicModel, Op, freeze, partition_by_key

ALIASES = {"get": "read", "put": "write", "set": "write", "compare-and-set": "cas"}


class CasRegisterModel(DeterministicModel[Any]):
    """A single register holding any hashable value; `initial` is its value before any write."""

    name = "cas-register"

    def __init__(self, initial: Any = None) -> None:
        self.initial = initial

    def init(self) -> Any:
        return self.initial

    def apply(self, state: Any, f: str, value: Any) -> tuple[Any, Any]:
        if f == "read":
            return state, state
        if f == "write":
            return None, value
        if f == "cas":
            old, new = value
            return (True, new) if state == old else (False, state)
        raise ValueError(f"cas-register has no operation {f!r} (expected read, write or cas)")

    def compile_step(self, op: Op) -> Callable[[Any], tuple[bool, Any]]:
        """`step` specialised to one operation: what the checker calls in its inner loop."""
        f, value, out = op.f, op.value, op.output
        if f == "read":
            if out is UNKNOWN:
                return lambda s: (True, s)
            return lambda s: (s == out, s)
        if f == "write":
            result = (True, value)
            return lambda s: result
        if f == "cas":
            old, new = value
            took = (True, new)
            if out is UNKNOWN:
                return lambda s: took if s == old else (True, s)
            if out:
                return lambda s: took if s == old else (False, s)
            return lambda s: (False, s) if s == old else (True, s)
        raise ValueError(f"cas-register has no operation {f!r} (expected read, write or cas)")

    def adapt(self, op: Op) -> Op:
        """Normalise Jepsen's encodings: [k v] tuples of independent keys, echoed write/cas values."""
        f = ALIASES.get(op.f, op.f)
        value, output, key = op.value, op.output, op.key
        if key is None and _is_independent(f, value):
            key, value = value[0], value[1]
            if output is not UNKNOWN and _is_pair(output):
                output = output[1]
        key = freeze(key)  # any JSON value may name the register
        if f == "read":
            return Op(f, None, output if output is UNKNOWN else freeze(output), key, op.process)
        if f == "write":
            return Op(f, freeze(value), output if output is UNKNOWN else None, key, op.process)
        if f == "cas":
            if not _is_pair(value):
                raise ValueError(f"cas expects [old new], got {value!r}")
            if output is not UNKNOWN and not isinstance(output, bool):
                output = True  # Jepsen echoes the input on ok: the cas took effect
            return Op(f, (freeze(value[0]), freeze(value[1])), output, key, op.process)
        raise ValueError(f"cas-register has no operation {op.f!r} (expected read, write or cas)")

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return partition_by_key(ops)

    def describe_state(self, state: Any) -> str:
        return "nil" if state is None else repr(state)


def _is_pair(v: Any) -> bool:
    return isinstance(v, list | tuple) and len(v) == 2


def _is_independent(f: str, value: Any) -> bool:
    if not _is_pair(value):
        return False
    return _is_pair(value[1]) if f == "cas" else f in ("read", "write")
