"""The lease mutex: one holder at a time, expiry as an explicit event, a fencing counter.

Operations (`Op.process` is the acting client, `Op.key` the lock; keys are independent):

    f        process  value  output
    acquire  p        None   True: p now holds the lease; False: a lease is held (by p too:
                             not reentrant). A fenced lease outputs its fencing token instead
                             of True: an int strictly greater than every token granted before.
    release  p        None   "ok": p held the lease, now free; "not-owner": p holds no valid
                             lease (never acquired, expired, or taken by another); nothing changes.
    extend   p        None   True: p holds the lease and keeps it; "not-owner" as for release.
    expire   None     None   None: a harness event; the current lease ends, its holder is not told.

The state is the holder and the fencing counter: the number of the last lease granted
(for a fenced lease, the last token observed). The holder's token is the counter, so
a lease that expired can never be released or extended again, even by its old holder.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from contend.models.base import UNKNOWN, DeterministicModel, Op, partition_by_key

OK = "ok"
NOT_OWNER = "not-owner"
CLIENT_OPERATIONS = ("acquire", "release", "extend")


@dataclass(frozen=True)
class LeaseState:
    """Who holds the lease (None: free) and the last fencing token granted (below 0: none yet;
    a fenced lease starts at -1, so a first token of 0 is legal)."""

    holder: Hashable | None = None
    fence: int = 0


def holder(state: LeaseState) -> Hashable | None:
    """The process holding a valid lease, None when the lock is free."""
    return state.holder


def token(state: LeaseState) -> int | None:
    """The current lease's fencing token, None when the lock is free."""
    return state.fence if state.holder is not None else None


class LeaseModel(DeterministicModel[LeaseState]):
    """A non-reentrant lease mutex; `fenced` leases output tokens from acquire.

    With `spontaneous_expiry`, the lease may also expire unseen just before any
    operation (real TTLs in a stress run): `step` then accepts an outcome that an
    `expire` event right before it would explain. Without it, expiry happens only
    through explicit `expire` events (the step-by-step tests).

    With `may_refuse`, an acquire may also return False while the lock is free, changing
    nothing: a try-lock that can lose to contention (Redlock, when a vote splits over its
    masters). Granting a held lock stays illegal.
    """

    def __init__(
        self, fenced: bool = False, spontaneous_expiry: bool = False, may_refuse: bool = False
    ) -> None:
        self.fenced = fenced
        self.spontaneous_expiry = spontaneous_expiry
        self.may_refuse = may_refuse
        self.name = "fenced-lease" if fenced else "lease"

    def __repr__(self) -> str:
        return (
            f"LeaseModel(fenced={self.fenced}, spontaneous_expiry={self.spontaneous_expiry}, "
            f"may_refuse={self.may_refuse})"
        )

    def init(self) -> LeaseState:
        return LeaseState(None, -1) if self.fenced else LeaseState()

    def apply(
        self, state: LeaseState, f: str, value: Any = None, process: Any = None
    ) -> tuple[Any, LeaseState]:
        """The one correct output; a fenced acquire gives the smallest legal token (see `step`)."""
        if f == "expire":
            return None, LeaseState(None, state.fence)
        if f not in CLIENT_OPERATIONS:
            raise ValueError(f"lease model has no operation {f!r}: expected acquire, release, extend, expire")
        if process is None:
            raise ValueError(f"lease {f} needs the acting client in Op.process, got None")
        if f == "acquire":
            if state.holder is not None:
                return False, state
            granted = LeaseState(process, state.fence + 1)
            return (granted.fence if self.fenced else True), granted
        owns = state.holder == process
        if f == "release":
            return (OK, LeaseState(None, state.fence)) if owns else (NOT_OWNER, state)
        return (True if owns else NOT_OWNER), state

    def step(self, state: LeaseState, op: Op) -> tuple[bool, LeaseState]:
        legal, nxt = self._step_without_expiry(state, op)
        if not legal and self.spontaneous_expiry and state.holder is not None and op.f != "expire":
            # An unseen expiry is assumed only when needed: expiring later is never less permissive.
            return self._step_without_expiry(LeaseState(None, state.fence), op)
        return legal, nxt

    def _step_without_expiry(self, state: LeaseState, op: Op) -> tuple[bool, LeaseState]:
        expected, nxt = self.apply(state, op.f, op.value, op.process)
        if op.output is UNKNOWN:
            return True, nxt
        if self.may_refuse and op.f == "acquire" and op.output is False:
            return True, state  # lost to contention: nothing changed
        if self.fenced and op.f == "acquire" and state.holder is None:
            if _is_token(op.output) and op.output > state.fence:
                return True, LeaseState(op.process, op.output)
            return False, nxt
        return _same_output(op.output, expected), nxt

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return partition_by_key(ops)

    def describe_state(self, state: LeaseState) -> str:
        if state.holder is None:
            return "free (no token yet)" if state.fence < 0 else f"free (last token {state.fence})"
        return f"held by {state.holder!r} (token {state.fence})"


def _is_token(output: Any) -> bool:
    return isinstance(output, int) and not isinstance(output, bool)


def _same_output(output: Any, expected: Any) -> bool:
    """Equality that does not take 1 for True: a token is not a plain success."""
    if isinstance(output, bool) or isinstance(expected, bool):
        return output is expected
    return bool(output == expected)
