"""Single-flight: one computation per key and epoch; waiters get its value.

Operations (`Op.process` is the acting client, `Op.key` the flight; keys are independent):

    f        process  value  output
    compute  p        v      "ok": the expensive function ran in p and returned v (v = FAILED
                             when it raised). Recorded by the harness's wrapper around the
                             function, so never UNKNOWN. A compute while a flight is in
                             progress is a second computation in one epoch: the model's
                             output is "duplicate", so a recorded "ok" is illegal.
    call     p        None   (v, "leader"): p ran the computation and returns its v;
                             (v, "waiter"): p returns the latest computation's v;
                             "leader-failed": that computation raised;
                             "timeout": p gave up waiting (always legal: liveness is not checked).
    expire   None     None   None: a harness event; the flight's lease timed out, so the next
                             compute starts a new epoch (its leader has not returned yet).

Epochs: a compute when no flight is in progress starts a new epoch and its flight; the
flight lasts until its leader's call returns or an `expire` event. Waiters return the
latest computation's value at the moment their call takes effect, so a waiter that
completes after its leader returned is still legal. The model does not see elections,
so it cannot tell which flight a waiter joined: give each computation a distinct value
(e.g. (process, n)) to make a stale or foreign result visible.
"""

from __future__ import annotations

import enum
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from contend.models.base import UNKNOWN, DeterministicModel, Op, partition_by_key


class Result(enum.Enum):
    """What a flight holds besides a value: nothing computed yet, or a raised computation."""

    NO_RESULT = "no-result"
    FAILED = "failed"

    def __repr__(self) -> str:
        return self.name


NO_RESULT = Result.NO_RESULT
FAILED = Result.FAILED

OK = "ok"
DUPLICATE = "duplicate"
LEADER = "leader"
WAITER = "waiter"
LEADER_FAILED = "leader-failed"
TIMEOUT = "timeout"


@dataclass(frozen=True)
class FlightState:
    """One key's flights.

    `epoch` counts the epochs begun (each has exactly one computation), `result` is the
    latest computation's value, `leader` the process whose flight is in progress (None:
    no flight), and `unreturned` the (leader, value) pairs whose call has not returned.
    """

    epoch: int = 0
    result: Hashable = NO_RESULT
    leader: Hashable | None = None
    unreturned: frozenset[tuple[Hashable, Hashable]] = frozenset()


def in_flight(state: FlightState) -> bool:
    """Whether a computation ran and its flight has not ended: another would be a duplicate."""
    return state.leader is not None


def computations(state: FlightState) -> int:
    """Computations so far: one per epoch."""
    return state.epoch


class SingleFlightModel(DeterministicModel[FlightState]):
    """Single-flight per key (see the module docstring for the vocabulary)."""

    name = "single-flight"

    def init(self) -> FlightState:
        return FlightState()

    def apply(
        self, state: FlightState, f: str, value: Any = None, process: Any = None
    ) -> tuple[Any, FlightState]:
        if f == "expire":
            return None, replace(state, leader=None)
        if f not in ("compute", "call"):
            raise ValueError(f"single-flight model has no operation {f!r}: expected compute, call, expire")
        if process is None:
            raise ValueError(f"single-flight {f} needs the acting client in Op.process, got None")
        if f == "compute":
            if in_flight(state):
                return DUPLICATE, state
            value = _freeze(value)
            mine = frozenset(pair for pair in state.unreturned if pair[0] != process) | {(process, value)}
            return OK, FlightState(state.epoch + 1, value, process, mine)
        return self._call(state, process)

    @staticmethod
    def _call(state: FlightState, process: Hashable) -> tuple[Any, FlightState]:
        own = [result for leader, result in state.unreturned if leader == process]
        nxt = FlightState(
            state.epoch,
            state.result,
            None if state.leader == process else state.leader,
            frozenset(pair for pair in state.unreturned if pair[0] != process),
        )
        if own:
            return (LEADER_FAILED if own[0] is FAILED else (own[0], LEADER)), nxt
        if state.result is NO_RESULT:
            return TIMEOUT, nxt
        if state.result is FAILED:
            return LEADER_FAILED, nxt
        return (state.result, WAITER), nxt

    def step(self, state: FlightState, op: Op) -> tuple[bool, FlightState]:
        expected, nxt = self.apply(state, op.f, op.value, op.process)
        output = _freeze(op.output)
        legal = output is UNKNOWN or output == expected or (op.f == "call" and output == TIMEOUT)
        return legal, nxt

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return partition_by_key(ops)

    def describe_state(self, state: FlightState) -> str:
        if state.epoch == 0:
            return "no computation yet"
        flight = f"in flight, leader {state.leader!r}" if in_flight(state) else "ended"
        text = f"epoch {state.epoch} {flight}, result {state.result!r}"
        if state.unreturned:
            text += "; leaders not returned: " + ", ".join(sorted(repr(p) for p, _ in state.unreturned))
        return text


def _freeze(value: Any) -> Any:
    """Lists (as a JSON history gives them) become tuples, so values stay hashable and comparable."""
    if isinstance(value, list | tuple):
        return tuple(_freeze(item) for item in value)
    return value
