"""The name→ID registry: ids from 1, gap-free, same name same id, tables agree.

The state is the tuple of registered names in id order, so name `state[i]`
has id `i + 1`: gap-freeness is built into the representation.
"""

from __future__ import annotations

from typing import Any

from contend.models.base import UNKNOWN, DeterministicModel, Op, freeze

RegistryState = tuple[str, ...]


class RegistryModel(DeterministicModel[RegistryState]):
    """Operations: register(name), register_many(names), lookup(name), reverse(id), count()."""

    name = "registry"

    def init(self) -> RegistryState:
        return ()

    def apply(self, state: RegistryState, f: str, value: Any) -> tuple[Any, RegistryState]:
        if f == "register":
            return self._register(state, value)
        if f == "register_many":
            ids = []
            for name in value:
                new_id, state = self._register(state, name)
                ids.append(new_id)
            return tuple(ids), state
        if f == "lookup":
            return (state.index(value) + 1 if value in state else None), state
        if f == "reverse":
            return (state[value - 1] if isinstance(value, int) and 0 < value <= len(state) else None), state
        if f == "count":
            return len(state), state
        raise ValueError(f"registry model has no operation {f!r}")

    def adapt(self, op: Op) -> Op:
        """Names and ids are read as JSON (lists); the model's are hashable (tuples)."""
        if op.f == "register_many" and not isinstance(op.value, list | tuple):
            raise ValueError(f"register_many expects a list of names, got {op.value!r}")
        output = op.output if op.output is UNKNOWN else freeze(op.output)
        return Op(op.f, freeze(op.value), output, op.key, op.process)

    @staticmethod
    def _register(state: RegistryState, name: str) -> tuple[int, RegistryState]:
        if name in state:
            return state.index(name) + 1, state
        return len(state) + 1, (*state, name)

    def describe_state(self, state: RegistryState) -> str:
        shown = ", ".join(f"{n!r}→{i + 1}" for i, n in enumerate(state[:8]))
        more = f", … ({len(state)} names)" if len(state) > 8 else ""
        return "{" + shown + more + "}"
