"""The name→ID registry one name at a time, so a long history splits by name.

Per name: register(name) returns the same id forever once one is assigned,
lookup(name) returns that id or None before it, reverse(id) → name agrees.
What spans names (distinct names get distinct ids, ids gap-free from 1) is not
a per-name property: contend.history.invariants.registry_ids checks it in linear time.
count() and reverse(id) → None belong to no name and are left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from contend.models.base import UNKNOWN, Op

#: (name, id) pairs in registration order; the id is UNKNOWN after a register whose reply was lost.
ByNameState = tuple[tuple[str, Any], ...]


class RegistryByNameModel:
    """register(name) → id, lookup(name) → id | None, reverse(id) → name; partitioned by name."""

    name = "registry-by-name"

    def init(self) -> ByNameState:
        return ()

    def step(self, state: ByNameState, op: Op) -> tuple[bool, ByNameState]:
        f, out = op.f, op.output
        name = op.value if f in ("register", "lookup") else out
        if f == "reverse" and not isinstance(name, str):
            return out is UNKNOWN or out is None, state  # not a per-name claim
        if f not in ("register", "lookup", "reverse"):
            raise ValueError(f"registry-by-name has no operation {f!r} (expected register, lookup, reverse)")
        current = _find(state, name)
        if f == "register":
            if out is UNKNOWN:
                return True, state if current is not None else (*state, (name, UNKNOWN))
            if not _is_id(out):
                return False, state
            if current is None:
                return (not _taken(state, out)), (*state, (name, out))
            if current[1] is UNKNOWN:
                return True, _assign(state, name, out)
            return current[1] == out, state
        if f == "lookup":
            if out is UNKNOWN:
                return True, state
            if out is None:
                return current is None, state
            if current is None or not _is_id(out):
                return False, state
            if current[1] is UNKNOWN:
                return True, _assign(state, name, out)
            return current[1] == out, state
        # reverse(id) → name
        ident = op.value
        if current is None:
            return False, state
        if current[1] is UNKNOWN:
            return True, _assign(state, name, ident)
        return current[1] == ident, state

    def compile_step(self, op: Op) -> Callable[[ByNameState], tuple[bool, ByNameState]]:
        """`step` specialised to one operation; the common single-name cases skip the dispatch."""
        f, out, name = op.f, op.output, op.value
        if f == "register" and _is_id(out):
            new = ((name, out),)
            ok = (True, new)

            def register(s: ByNameState) -> tuple[bool, ByNameState]:
                if not s:
                    return ok
                if len(s) == 1 and s[0][0] == name:
                    ident = s[0][1]
                    return ok if ident is UNKNOWN else (ident == out, s)
                return self.step(s, op)

            return register
        if f == "lookup" and (out is None or _is_id(out)):
            ok_new = (True, ((name, out),))

            def lookup(s: ByNameState) -> tuple[bool, ByNameState]:
                if not s:
                    return out is None, s
                if len(s) == 1 and s[0][0] == name:
                    ident = s[0][1]
                    if ident is UNKNOWN:
                        return ok_new if out is not None else (False, s)
                    return ident == out, s
                return self.step(s, op)

            return lookup
        return lambda s: self.step(s, op)

    def adapt(self, op: Op) -> Op:
        """The name is the key: op.value for register/lookup, the output of reverse."""
        if op.f in ("register", "lookup"):
            return Op(op.f, op.value, op.output, op.value, op.process)
        if op.f == "reverse":
            key = op.output if isinstance(op.output, str) else None
            return Op(op.f, op.value, op.output, key, op.process)
        if op.f == "count":
            return Op(op.f, op.value, op.output, None, op.process)
        raise ValueError(
            f"registry-by-name has no operation {op.f!r} (expected register, lookup, reverse, count; "
            "register_many spans names and cannot be checked name by name)"
        )

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        """One partition per name; count() and reverse → None are in none."""
        groups: dict[Any, list[Op]] = {}
        for op in ops:
            if op.key is not None:
                groups.setdefault(op.key, []).append(op)
        return list(groups.values())

    def describe_state(self, state: ByNameState) -> str:
        if not state:
            return "{} (nothing registered)"
        return "{" + ", ".join(f"{n!r}→{'?' if i is UNKNOWN else i}" for n, i in state) + "}"


def _is_id(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1


def _find(state: ByNameState, name: Any) -> tuple[str, Any] | None:
    for pair in state:
        if pair[0] == name:
            return pair
    return None


def _taken(state: ByNameState, ident: int) -> bool:
    return any(i == ident for _, i in state)


def _assign(state: ByNameState, name: Any, ident: Any) -> ByNameState:
    return tuple((n, ident if n == name else i) for n, i in state)
