"""Linearizability checking: Wing & Gong's search with Lowe's memoization (as in Porcupine).

The history is split by the model's `partition` (P-compositionality: a history
is linearizable iff each partition is) and each partition is searched on its
own. Calls and returns sit in one time-ordered doubly linked list; the search
linearizes a pending call when the model allows it, lifts the call (and its
return) out of the list, and backtracks when it meets a return whose call it
could not linearize. A cache of (linearized set, model state) pairs, the set a
Python int used as a bitset, prunes every configuration seen before.

Info operations (outcome unknown) have no return: they may be linearized at any
point after their call, or never. Failed operations are dropped, as Knossos
does: `fail` means the operation did not take effect, and it constrains
nothing. (Porcupine's etcd model reads a failed cas as "the value was not the
expected one"; to keep that evidence, record such a cas as `ok` with a false
result, which the cas-register model checks.) Each partition has a time budget; when it is
spent the partition's verdict is "unknown", never a hang.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from contend.history.records import Call, HistoryError, Paired, Record, pair
from contend.models.base import Model, Op

Transition = Callable[[Any], tuple[bool, Any]]


class Linearizability(enum.Enum):
    """The verdict of a check, with the CLI's exit code."""

    LINEARIZABLE = "linearizable"
    NOT_LINEARIZABLE = "not linearizable"
    UNKNOWN = "unknown"

    @property
    def exit_code(self) -> int:
        return {"linearizable": 0, "not linearizable": 1, "unknown": 3}[self.value]


@dataclass
class PartitionResult:
    """One partition's verdict and evidence.

    `linearization` is the longest linearizable prefix the search found (a
    complete linearization when the partition is linearizable), `states` the
    model state after each of its operations, `culprit` the first operation
    that cannot be linearized after any such prefix.
    """

    key: Any
    outcome: Linearizability
    calls: list[Call]
    linearization: list[Call]
    states: list[str]
    culprit: Call | None
    culprit_op: Op | None
    explored: int
    seconds: float

    def explain(self) -> str:
        """Two or three lines a person can act on."""
        where = "" if self.key is None else f" (key {self.key!r})"
        if self.outcome is Linearizability.LINEARIZABLE:
            return f"partition{where}: linearizable, {len(self.calls)} operations"
        if self.outcome is Linearizability.UNKNOWN:
            return (
                f"partition{where}: unknown after {self.seconds:.2f} s and {self.explored} steps "
                f"({len(self.calls)} operations); the search budget was spent"
            )
        state = self.states[-1] if self.states else "the initial state"
        lines = [
            f"partition{where}: not linearizable; {len(self.linearization)} of {len(self.calls)} "
            f"operations linearize, then none fits",
        ]
        if self.culprit is not None:
            lines.append(
                f"  cannot linearize {self.culprit.describe()} "
                f"[{_line(self.culprit)}] after the longest linearizable prefix, state {state}"
            )
        return "\n".join(lines)


@dataclass
class Verdict:
    """The whole history's verdict; `partitions` holds the ones that are not linearizable or unknown."""

    outcome: Linearizability
    model: str
    calls: list[Call]
    nemesis: list[Record]
    partitions: list[PartitionResult]
    checked: int
    operations: int
    skipped: int
    seconds: float
    timeout: float | None = None
    linearizations: dict[Any, list[Call]] = field(default_factory=dict)

    @property
    def culprit(self) -> Call | None:
        """The first operation that cannot be linearized (earliest among failing partitions)."""
        bad = [
            p.culprit for p in self.partitions if p.outcome is Linearizability.NOT_LINEARIZABLE and p.culprit
        ]
        return min(bad, key=lambda c: (c.end if c.end is not None else c.start, c.id)) if bad else None

    def summary(self) -> str:
        text = (
            f"{self.outcome.value}: {self.operations} operations in {self.checked} partition(s), "
            f"model {self.model}, {self.seconds:.2f} s"
        )
        if self.skipped:
            text += f"; {self.skipped} operation(s) the model does not check"
        return text

    def to_json(self) -> dict[str, Any]:
        """Everything a machine needs: outcome, counts, and each failing partition's evidence."""
        return {
            "outcome": self.outcome.value,
            "model": self.model,
            "operations": self.operations,
            "partitions_checked": self.checked,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 6),
            "timeout_per_partition": self.timeout,
            "culprit": _call_json(self.culprit) if self.culprit else None,
            "partitions": [
                {
                    "key": _plain(p.key),
                    "outcome": p.outcome.value,
                    "operations": len(p.calls),
                    "explored": p.explored,
                    "seconds": round(p.seconds, 6),
                    "culprit": _call_json(p.culprit) if p.culprit else None,
                    "longest_prefix": [
                        {**_call_json(c), "state_after": s}
                        for c, s in zip(p.linearization, p.states, strict=True)
                    ],
                }
                for p in self.partitions
            ],
        }


# --------------------------------------------------------------------------- entry points


def check_history(
    records: Sequence[Record],
    model: Model[Any],
    *,
    timeout: float | None = None,
    keep_linearizations: bool = False,
) -> Verdict:
    """Pair `records` and check them against `model`; `timeout` is seconds per partition."""
    paired = pair(records)
    return check_paired(paired, model, timeout=timeout, keep_linearizations=keep_linearizations)


def check_paired(
    paired: Paired, model: Model[Any], *, timeout: float | None = None, keep_linearizations: bool = False
) -> Verdict:
    """Check an already paired history."""
    return check_calls(
        paired.calls, model, timeout=timeout, nemesis=paired.nemesis, keep_linearizations=keep_linearizations
    )


def check_calls(
    calls: Sequence[Call],
    model: Model[Any],
    *,
    timeout: float | None = None,
    nemesis: Sequence[Record] = (),
    keep_linearizations: bool = False,
) -> Verdict:
    """Check paired calls. Failed calls did not take effect and are left out.

    Raises HistoryError (naming the line) when an operation is not one the
    model knows.
    """
    started = time.perf_counter()
    live = [c for c in calls if c.status != "fail"]
    adapt: Callable[[Op], Op] | None = getattr(model, "adapt", None)
    ops: list[Op] = []
    for c in live:
        op = c.op()
        if adapt is not None:
            try:
                op = adapt(op)
            except (ValueError, TypeError, IndexError) as exc:
                raise HistoryError(f"{_line(c)}: {c.f}: {exc}") from None
        ops.append(op)
    position = {id(op): k for k, op in enumerate(ops)}
    groups = model.partition(ops)
    compile_step: Callable[[Op], Transition] | None = getattr(model, "compile_step", None)
    init = model.init
    failing: list[PartitionResult] = []
    kept: dict[Any, list[Call]] = {}
    outcome = Linearizability.LINEARIZABLE
    covered = 0
    for group in groups:
        if not group:
            continue
        try:
            members = [position[id(op)] for op in group]
        except KeyError:
            raise TypeError(
                f"{type(model).__name__}.partition must return the Op objects it was given"
            ) from None
        covered += len(members)
        part_calls = [live[k] for k in members]
        result = check_partition(
            part_calls, group, model, timeout=timeout, compile_step=compile_step, init=init
        )
        if result.outcome is Linearizability.NOT_LINEARIZABLE:
            failing.append(result)
            outcome = Linearizability.NOT_LINEARIZABLE
        elif result.outcome is Linearizability.UNKNOWN:
            failing.append(result)
            if outcome is Linearizability.LINEARIZABLE:
                outcome = Linearizability.UNKNOWN
        elif keep_linearizations:
            kept[result.key] = result.linearization
    return Verdict(
        outcome=outcome,
        model=getattr(model, "name", type(model).__name__),
        calls=list(calls),
        nemesis=list(nemesis),
        partitions=failing,
        checked=sum(1 for g in groups if g),
        operations=len(live),
        skipped=len(live) - covered,
        seconds=time.perf_counter() - started,
        timeout=timeout,
        linearizations=kept,
    )


def check_partition(
    calls: Sequence[Call],
    ops: Sequence[Op],
    model: Model[Any],
    *,
    timeout: float | None = None,
    compile_step: Callable[[Op], Transition] | None = None,
    init: Callable[[], Any] | None = None,
    keep: bool = True,
) -> PartitionResult:
    """Search one partition: `ops[i]` is the model's view of `calls[i]`.

    `keep` False leaves a linearizable partition's `linearization` empty (saves time).
    """
    started = time.perf_counter()
    if compile_step is not None:
        steps: list[Transition] = []
        for c, op in zip(calls, ops, strict=True):
            try:
                steps.append(compile_step(op))
            except (ValueError, TypeError) as exc:
                raise HistoryError(f"{_line(c)}: {c.f}: {exc}") from None
    else:
        steps = [_bind(model.step, op) for op in ops]
    deadline = None if timeout is None else started + timeout
    try:
        found, order, states, culprit, explored = search(
            steps, [c.start for c in calls], [c.end for c in calls], (init or model.init)(), deadline
        )
    except _StepError as exc:
        c = calls[exc.index]
        raise HistoryError(f"{_line(c)}: {c.f}: {exc.cause}") from None
    describe = model.describe_state
    return PartitionResult(
        key=ops[0].key if ops else None,
        outcome=found,
        calls=list(calls),
        linearization=[calls[i] for i in order] if found is not Linearizability.LINEARIZABLE or keep else [],
        states=[describe(s) for s in states] if found is not Linearizability.LINEARIZABLE else [],
        culprit=calls[culprit] if culprit is not None else None,
        culprit_op=ops[culprit] if culprit is not None else None,
        explored=explored,
        seconds=time.perf_counter() - started,
    )


# --------------------------------------------------------------------------- the search


class _StepError(Exception):
    def __init__(self, index: int, cause: Exception) -> None:
        super().__init__(index, cause)
        self.index = index
        self.cause = cause


def _undominated(seen: list[int], maybe: int) -> bool:
    """True (and `maybe` recorded) unless some set in `seen` is a subset of `maybe`."""
    absent = ~maybe
    for old in seen:
        if not old & absent:
            return False
    seen.append(maybe)
    return True


def _bind(step: Callable[[Any, Op], tuple[bool, Any]], op: Op) -> Transition:
    return lambda state: step(state, op)


#: Earlier info-op sets a new configuration is compared with (dominance pruning).
DOMINANCE_CHECKS = 64

#: Search steps between looks at the clock.
CLOCK_EVERY = 4096


def search(
    steps: Sequence[Transition],
    starts: Sequence[int],
    ends: Sequence[int | None],
    init: Any,
    deadline: float | None = None,
) -> tuple[Linearizability, list[int], list[Any], int | None, int]:
    """The WGL search over operations 0..n-1 with call times `starts` and return times `ends`.

    `steps[i](state) -> (legal, next_state)`; `ends[i]` None means the
    operation may never have taken effect. Returns (outcome, the longest
    linearizable prefix as operation indices, the state after each, the
    culprit's index or None, steps explored).
    """
    n = len(steps)
    events: list[tuple[int, int, int]] = []
    remaining = 0
    for i in range(n):
        events.append((starts[i], 0, i))
        end = ends[i]
        if end is not None:
            events.append((end, 1, i))
            remaining += 1
    if not remaining:
        return Linearizability.LINEARIZABLE, [], [], None, 0
    # Calls sort before returns at the same time: equal timestamps overlap.
    events.sort()
    size = len(events)
    if size == 2 * n and all(events[k][2] == events[k + 1][2] for k in range(0, size, 2)):
        return _sequential(steps, [events[k][2] for k in range(0, size, 2)], init)
    # Entries 1..size are the events in time order. Two lists thread through them:
    # the main one (definite calls and all returns, sentinels `head` and `tail`)
    # and the info one (calls that never returned, sentinels `ihead` and `itail`).
    head, tail, ihead, itail = 0, size + 1, size + 2, size + 3
    op_of = [-1] * (size + 4)  # the operation of a call entry; -1 for returns and sentinels
    ret_of = [-1] * (size + 4)  # the operation of a return entry
    match = [0] * (size + 4)  # a call entry's return entry; 0 for an info call
    return_entry = [0] * n
    for pos, (_, kind, i) in enumerate(events, 1):
        if kind:
            ret_of[pos] = i
            return_entry[i] = pos
        else:
            op_of[pos] = i
    nxt = [0] * (size + 4)
    prv = [0] * (size + 4)
    last, ilast = head, ihead
    for pos in range(1, size + 1):
        i = op_of[pos]
        if i >= 0 and ends[i] is None:
            nxt[ilast], prv[pos], ilast = pos, ilast, pos
        else:
            if i >= 0:
                match[pos] = return_entry[i]
            nxt[last], prv[pos], last = pos, last, pos
    nxt[last], prv[tail], nxt[tail] = tail, last, tail
    nxt[ilast], prv[itail], nxt[itail] = itail, ilast, itail
    bit = [1 << i for i in range(n)]

    # The loop below is the hot path and calls no helper of its own: the main-list and
    # info-list branches repeat the visited-set test and the unlinking on purpose
    # (a function call per step costs more than the step; see --profile in
    # contend.benchmarks.checker).
    # Configurations seen: (definite ops linearized, state) → the info-op set(s) linearized
    # with them (an int, or a list of ints when there are several). A configuration is
    # pruned when one with the same definite ops and state and a subset of its info
    # ops was seen: that one can do all it can, info ops being optional.
    visited: dict[tuple[int, Any], Any] = {}
    stack_entries: list[int] = []
    stack_states: list[Any] = []
    stack_limits: list[int] = []
    state = init
    done = 0  # definite operations linearized, as a bitset
    maybe = 0  # info operations linearized
    explored = 0
    clock = CLOCK_EVERY
    best_pos = -1
    best_len = -1
    best_ops: list[int] = []
    best_states: list[Any] = []
    perf = time.perf_counter
    entry = nxt[head]
    limit = 0  # while scanning info calls: the first pending return; only calls before it may go
    in_main = True
    i = -1
    try:
        while True:
            if in_main:
                i = op_of[entry]
                if i < 0:
                    # The first pending return: try the info calls invoked before it.
                    limit = entry
                    entry = nxt[ihead]
                    in_main = False
                    continue
                legal, new_state = steps[i](state)
                if legal:
                    new_done = done | bit[i]
                    key = (new_done, new_state)
                    seen = visited.get(key)
                    if seen is None:
                        visited[key] = maybe
                        fresh = True
                    elif seen.__class__ is int:
                        fresh = bool(seen & ~maybe)
                        if fresh:
                            visited[key] = [seen, maybe]
                    else:
                        fresh = _undominated(seen, maybe)
                    if fresh:
                        stack_entries.append(entry)
                        stack_states.append(state)
                        stack_limits.append(0)
                        state = new_state
                        done = new_done
                        before = prv[entry]
                        after = nxt[entry]
                        nxt[before] = after
                        prv[after] = before
                        ret = match[entry]
                        before = prv[ret]
                        after = nxt[ret]
                        nxt[before] = after
                        prv[after] = before
                        remaining -= 1
                        if not remaining:
                            order = [op_of[e] for e in stack_entries]
                            return (
                                Linearizability.LINEARIZABLE,
                                order,
                                [],
                                None,
                                explored + CLOCK_EVERY - clock,
                            )
                        entry = nxt[head]
                        clock -= 1
                        if not clock:
                            clock = CLOCK_EVERY
                            explored += CLOCK_EVERY
                            if deadline is not None and perf() > deadline:
                                return Linearizability.UNKNOWN, best_ops, best_states, None, explored
                        continue
                entry = nxt[entry]
            elif entry < limit:
                i = op_of[entry]
                legal, new_state = steps[i](state)
                if legal:
                    new_maybe = maybe | bit[i]
                    key = (done, new_state)
                    seen = visited.get(key)
                    if seen is None:
                        visited[key] = new_maybe
                        fresh = True
                    elif seen.__class__ is int:
                        fresh = bool(seen & ~new_maybe)
                        if fresh:
                            visited[key] = [seen, new_maybe]
                    else:
                        fresh = _undominated(seen, new_maybe)
                    if fresh:
                        stack_entries.append(entry)
                        stack_states.append(state)
                        stack_limits.append(limit)
                        state = new_state
                        maybe = new_maybe
                        before = prv[entry]
                        after = nxt[entry]
                        nxt[before] = after
                        prv[after] = before
                        entry = nxt[head]
                        in_main = True
                        clock -= 1
                        if not clock:
                            clock = CLOCK_EVERY
                            explored += CLOCK_EVERY
                            if deadline is not None and perf() > deadline:
                                return Linearizability.UNKNOWN, best_ops, best_states, None, explored
                        continue
                entry = nxt[entry]
            else:
                # Nothing more fits before the return at `limit`: backtrack.
                if limit >= best_pos and (limit > best_pos or len(stack_entries) > best_len):
                    best_pos = limit
                    best_len = len(stack_entries)
                    best_ops = [op_of[e] for e in stack_entries]
                    best_states = [*stack_states[1:], state] if stack_entries else []
                if not stack_entries:
                    break
                entry = stack_entries.pop()
                state = stack_states.pop()
                limit = stack_limits.pop()
                ret = match[entry]
                if ret:
                    done ^= bit[op_of[entry]]
                    nxt[prv[ret]] = ret
                    prv[nxt[ret]] = ret
                    remaining += 1
                    in_main = True
                else:
                    maybe ^= bit[op_of[entry]]
                nxt[prv[entry]] = entry
                prv[nxt[entry]] = entry
                entry = nxt[entry]
                clock -= 1
                if not clock:
                    clock = CLOCK_EVERY
                    explored += CLOCK_EVERY
                    if deadline is not None and perf() > deadline:
                        return Linearizability.UNKNOWN, best_ops, best_states, None, explored
    except Exception as exc:
        if i >= 0:
            raise _StepError(i, exc) from exc
        raise
    culprit = ret_of[best_pos]
    return (
        Linearizability.NOT_LINEARIZABLE,
        best_ops,
        best_states,
        culprit if culprit >= 0 else None,
        explored + CLOCK_EVERY - clock,
    )


def _sequential(
    steps: Sequence[Transition], order: list[int], state: Any
) -> tuple[Linearizability, list[int], list[Any], int | None, int]:
    """No two operations overlap: the only linearization is the order they ran in."""
    states: list[Any] = []
    for k, i in enumerate(order):
        try:
            legal, state = steps[i](state)
        except Exception as exc:
            raise _StepError(i, exc) from exc
        if not legal:
            return Linearizability.NOT_LINEARIZABLE, order[:k], states, i, k + 1
        states.append(state)
    return Linearizability.LINEARIZABLE, order, [], None, len(order)


# --------------------------------------------------------------------------- helpers


def _line(c: Call) -> str:
    r = c.invoke
    return f"line {r.line}" if r.line is not None else f"record {r.index}"


def _plain(v: Any) -> Any:
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, str | int | float | bool) or v is None:
        return v
    return repr(v)


def _call_json(c: Call) -> dict[str, Any]:
    return {
        "id": c.id,
        "process": _plain(c.process),
        "f": c.f,
        "key": _plain(c.key),
        "value": _plain(c.value),
        "output": None if c.status == "info" else _plain(c.output),
        "type": c.status,
        "start": c.start,
        "end": c.end,
        "line": c.invoke.line,
        "index": c.invoke.index,
        "describe": c.describe(),
    }
