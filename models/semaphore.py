"""A counting semaphore: never more than `limit` holders; the fair one grants in ticket order.

Operations (`Op.process` is the acting client, `Op.key` the semaphore; keys are independent):

    f        process  value  output
    request  p        None   "ok": p takes a ticket and joins the line (fair only; a holder or
                             a process already in line keeps its place: nothing changes).
    acquire  p        None   True: p now holds a permit; False: refused (nothing changes, except
                             that a refused fair requester leaves the line). A process holds at
                             most one permit: acquire by a holder is False.
    release  p        None   "ok": p held a permit, now free; "not-owner": p holds none
                             (never acquired, or expired). A fair requester leaves the line.
    expire   None     q      None: a harness event; q's permit (or ticket) timed out, q is not told.

Fairness, sequentially: requesters wait in ticket order, and p is granted only while
everyone ahead of it still fits in the free permits (position in line < free permits),
so nobody is overtaken into starvation; with one free permit that is strict FIFO. An
acquire without a ticket takes one at the back first. A refused acquire gives its ticket
up, as in "Redis in Action" (the loser ZREMs itself): a retry must queue again. The
unfair semaphore has no line: acquire succeeds whenever a permit is free.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from contend.models.base import UNKNOWN, DeterministicModel, Op, partition_by_key

OK = "ok"
NOT_OWNER = "not-owner"


@dataclass(frozen=True)
class SemaphoreState:
    """The processes holding a permit, and the fair line of requesters (oldest ticket first)."""

    holders: frozenset[Hashable] = frozenset()
    line: tuple[Hashable, ...] = ()


def holders(state: SemaphoreState) -> frozenset[Hashable]:
    """The processes holding a permit."""
    return state.holders


def waiting(state: SemaphoreState) -> tuple[Hashable, ...]:
    """The fair semaphore's requesters, oldest ticket first."""
    return state.line


class SemaphoreModel(DeterministicModel[SemaphoreState]):
    """At most `limit` holders; `fair` adds the ticket line (see the module docstring)."""

    def __init__(self, limit: int, fair: bool = False) -> None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"a semaphore needs a limit of at least 1, got {limit!r}")
        self.limit = limit
        self.fair = fair
        self.name = "fair-semaphore" if fair else "semaphore"

    def __repr__(self) -> str:
        return f"SemaphoreModel(limit={self.limit}, fair={self.fair})"

    def init(self) -> SemaphoreState:
        return SemaphoreState()

    def free(self, state: SemaphoreState) -> int:
        """Permits nobody holds."""
        return self.limit - len(state.holders)

    def apply(
        self, state: SemaphoreState, f: str, value: Any = None, process: Any = None
    ) -> tuple[Any, SemaphoreState]:
        if f == "expire":
            return None, SemaphoreState(state.holders - {value}, _without(state.line, value))
        if f not in ("request", "acquire", "release"):
            raise ValueError(
                f"semaphore model has no operation {f!r}: expected request, acquire, release, expire"
            )
        if process is None:
            raise ValueError(f"semaphore {f} needs the acting client in Op.process, got None")
        if f == "request":
            if not self.fair:
                raise ValueError("the unfair semaphore has no line: request is for fair=True")
            if process in state.holders or process in state.line:
                return OK, state
            return OK, SemaphoreState(state.holders, (*state.line, process))
        if f == "release":
            line = _without(state.line, process)
            if process in state.holders:
                return OK, SemaphoreState(state.holders - {process}, line)
            return NOT_OWNER, SemaphoreState(state.holders, line)
        return self._acquire(state, process)

    def _acquire(self, state: SemaphoreState, process: Hashable) -> tuple[bool, SemaphoreState]:
        if process in state.holders:
            return False, state
        if not self.fair:
            if self.free(state) > 0:
                return True, SemaphoreState(state.holders | {process}, state.line)
            return False, state
        line = state.line if process in state.line else (*state.line, process)
        rest = _without(line, process)
        if line.index(process) < self.free(state):
            return True, SemaphoreState(state.holders | {process}, rest)
        return False, SemaphoreState(state.holders, rest)

    def step(self, state: SemaphoreState, op: Op) -> tuple[bool, SemaphoreState]:
        expected, nxt = self.apply(state, op.f, op.value, op.process)
        return (op.output is UNKNOWN or _same_output(op.output, expected)), nxt

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return partition_by_key(ops)

    def describe_state(self, state: SemaphoreState) -> str:
        held = ", ".join(sorted(map(repr, state.holders))) or "nobody"
        text = f"{len(state.holders)}/{self.limit} held by {held}"
        if self.fair:
            text += "; line: " + (", ".join(map(repr, state.line)) or "empty")
        return text


def _without(line: tuple[Hashable, ...], process: Any) -> tuple[Hashable, ...]:
    return tuple(p for p in line if p != process)


def _same_output(output: Any, expected: Any) -> bool:
    """Equality that does not take 1 for True."""
    if isinstance(output, bool) or isinstance(expected, bool):
        return output is expected
    return bool(output == expected)
