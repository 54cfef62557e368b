"""The model protocol every sequential specification follows."""

from __future__ import annotations

import enum
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

S = TypeVar("S", bound=Hashable)


class Unknown(enum.Enum):
    """The output of an operation whose outcome was never observed (Jepsen's `info`)."""

    UNKNOWN = "unknown"

    def __repr__(self) -> str:
        return "UNKNOWN"


UNKNOWN = Unknown.UNKNOWN


@dataclass(frozen=True)
class Op:
    """One operation as a model sees it.

    `f` is the operation's name ("register", "acquire", "cas", ...), `value` its
    input, `output` what the client observed (UNKNOWN when it never learned),
    `key` the object it touches (None for single-object models).
    """

    f: str
    value: Any = None
    output: Any = UNKNOWN
    key: Any = None
    process: Any = None


class Model(Protocol, Generic[S]):
    """A sequential specification: states are hashable so a checker can memoize."""

    name: str

    def init(self) -> S:
        """The state before any operation."""
        ...

    def step(self, state: S, op: Op) -> tuple[bool, S]:
        """(legal, next_state): could `op` have returned `op.output` from `state`?"""
        ...

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        """Split into independently checkable sub-histories (P-compositionality)."""
        ...

    def describe_state(self, state: S) -> str:
        """One line a person can read."""
        ...


class DeterministicModel(Generic[S]):
    """A model whose every operation has exactly one correct output.

    Subclasses write `apply(state, f, value) -> (output, next_state)`; `step`
    follows: legal when the observed output is the one `apply` gives, and any
    output is legal when it is UNKNOWN.
    """

    name = "deterministic"

    def init(self) -> S:
        raise NotImplementedError

    def apply(self, state: S, f: str, value: Any) -> tuple[Any, S]:
        raise NotImplementedError

    def step(self, state: S, op: Op) -> tuple[bool, S]:
        expected, nxt = self.apply(state, op.f, op.value)
        return (op.output is UNKNOWN or op.output == expected), nxt

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return single_partition(ops)

    def describe_state(self, state: S) -> str:
        return repr(state)


def single_partition(ops: Sequence[Op]) -> list[list[Op]]:
    """The trivial partition: everything together."""
    return [list(ops)]


def partition_by_key(ops: Sequence[Op]) -> list[list[Op]]:
    """One partition per `op.key` (lists and objects compared by value), in first-seen order."""
    groups: dict[Any, list[Op]] = {}
    for op in ops:
        groups.setdefault(freeze(op.key), []).append(op)
    return list(groups.values())


def freeze(v: Any) -> Any:
    """Lists to tuples and dicts to sorted item tuples, recursively: model states must be hashable."""
    if isinstance(v, list | tuple):
        return tuple(freeze(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted(((k, freeze(x)) for k, x in v.items()), key=repr))
    if isinstance(v, set | frozenset):
        return frozenset(freeze(x) for x in v)
    return v
