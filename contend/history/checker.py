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
from collections.abc import Callable, Generator, Sequence
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


#: What a search returns: (outcome, the longest linearizable prefix as operation indices,
#: the model state after each, the culprit's index or None, steps explored).
SearchResult = tuple[Linearizability, list[int], list[Any], "int | None", int]


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
    #: The partition's place in the history (its first call's id): results are listed in this order.
    order: int = 0

    def explain(self) -> str:
        """Two or three lines a person can act on."""
        where = "" if self.key is None else f" (key {self.key!r})"
        if self.outcome is Linearizability.LINEARIZABLE:
            return f"partition{where}: linearizable, {len(self.calls)} operations"
        if self.outcome is Linearizability.UNKNOWN:
            return (
                f"partition{where}: open after {self.seconds:.2f} s and {self.explored} steps of search "
                f"({len(self.calls)} operations) when the time budget ran out"
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
    """The whole history's verdict.

    `partitions` holds the ones that are not linearizable, then the ones left
    open when the time budget ran out; `unsearched` counts the partitions not
    searched at all because one was already proven not linearizable.
    """

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
    unsearched: int = 0

    @property
    def open(self) -> int:
        """Partitions whose search the time budget cut short."""
        return sum(1 for p in self.partitions if p.outcome is Linearizability.UNKNOWN)

    @property
    def decided(self) -> int:
        """Partitions with a verdict of their own."""
        return self.checked - self.open - self.unsearched

    @property
    def culprit(self) -> Call | None:
        """The first operation that cannot be linearized (earliest among failing partitions)."""
        bad = [
            p.culprit for p in self.partitions if p.outcome is Linearizability.NOT_LINEARIZABLE and p.culprit
        ]
        return min(bad, key=lambda c: (c.end if c.end is not None else c.start, c.id)) if bad else None

    def summary(self) -> str:
        """One line: the verdict, what it covers and what was left undecided."""
        text = (
            f"{self.outcome.value}: {self.operations} operations in {self.checked} partition(s), "
            f"model {self.model}, {self.seconds:.2f} s"
        )
        if self.outcome is Linearizability.UNKNOWN:
            text += (
                f"; the {self.timeout:g} s budget ran out with {self.decided} partition(s) decided "
                f"(all linearizable) and {self.open} open"
            )
        elif self.open:
            text += f"; {self.open} partition(s) still open when the {self.timeout:g} s budget ran out"
        if self.unsearched:
            text += (
                f"; stopped at the first partition proven not linearizable, {self.unsearched} "
                "not searched (--all searches every one)"
            )
        if self.skipped:
            text += f"; {self.skipped} operation(s) outside the search (for the invariants)"
        return text

    def to_json(self) -> dict[str, Any]:
        """Everything a machine needs: outcome, counts, and each failing partition's evidence."""
        return {
            "outcome": self.outcome.value,
            "model": self.model,
            "operations": self.operations,
            "partitions_checked": self.checked,
            "partitions_decided": self.decided,
            "partitions_open": self.open,
            "partitions_unsearched": self.unsearched,
            "skipped": self.skipped,
            "seconds": round(self.seconds, 6),
            "timeout": self.timeout,
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


class NothingToCheck(HistoryError):
    """No operation the model checks took effect: a history that decides nothing is never a pass."""


def check_history(
    records: Sequence[Record],
    model: Model[Any],
    *,
    timeout: float | None = None,
    keep_linearizations: bool = False,
    all_partitions: bool = False,
) -> Verdict:
    """Pair `records` and check them against `model`; `timeout` is seconds for the whole check."""
    paired = pair(records)
    return check_paired(
        paired,
        model,
        timeout=timeout,
        keep_linearizations=keep_linearizations,
        all_partitions=all_partitions,
    )


def check_paired(
    paired: Paired,
    model: Model[Any],
    *,
    timeout: float | None = None,
    keep_linearizations: bool = False,
    all_partitions: bool = False,
) -> Verdict:
    """Check an already paired history."""
    return check_calls(
        paired.calls,
        model,
        timeout=timeout,
        nemesis=paired.nemesis,
        keep_linearizations=keep_linearizations,
        all_partitions=all_partitions,
    )


#: A turn of the partitions' searches is at most this many slices of CLOCK_EVERY steps each.
MAX_SLICES = 16


def check_calls(
    calls: Sequence[Call],
    model: Model[Any],
    *,
    timeout: float | None = None,
    nemesis: Sequence[Record] = (),
    keep_linearizations: bool = False,
    all_partitions: bool = False,
) -> Verdict:
    """Check paired calls. Failed calls did not take effect and are left out.

    The partitions' searches take turns (slices that double, up to
    MAX_SLICES), so the first partition proven not linearizable ends the
    check early, unless `all_partitions`; `timeout` is the budget of the whole
    check, past which the partitions still open make the verdict UNKNOWN.
    Raises HistoryError (naming the line) when an operation is not one the
    model knows, and NothingToCheck when no operation is left to check.
    """
    started = time.perf_counter()
    deadline = None if timeout is None else started + timeout
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
    try:
        groups = [g for g in model.partition(ops) if g]
    except TypeError as exc:  # a key the model cannot tell apart: an object where a name goes
        raise HistoryError(f"cannot partition the history by key: {exc}") from None
    if not groups or not any(c.status == "ok" for c in live):
        raise NothingToCheck(_nothing(calls, live))
    compile_step: Callable[[Op], Transition] | None = getattr(model, "compile_step", None)
    pending: list[_Partition] = []
    covered = 0
    for group in groups:
        try:
            members = [position[id(op)] for op in group]
        except KeyError:
            raise TypeError(
                f"{type(model).__name__}.partition must return the Op objects it was given"
            ) from None
        covered += len(members)
        pending.append(_Partition([live[k] for k in members], group, model, compile_step))

    results: list[PartitionResult] = []
    slices = 1
    stopped = timed_out = False
    while pending and not (stopped or timed_out):
        still: list[_Partition] = []
        for k, part in enumerate(pending):
            if part.advance(slices, deadline):
                result = part.finish(keep_linearizations)
                results.append(result)
                if result.outcome is Linearizability.NOT_LINEARIZABLE and not all_partitions:
                    stopped = True
            else:
                still.append(part)
            if stopped or (deadline is not None and time.perf_counter() > deadline):
                still.extend(pending[k + 1 :])
                timed_out = not stopped and bool(still)
                break
        pending = still
        slices = min(2 * slices, MAX_SLICES)
    unsearched = 0
    if stopped:
        unsearched = len(pending)
    else:
        # The budget ran out: what each open search found so far.
        results.extend(part.finish(keep_linearizations) for part in pending)
    outcomes = {r.outcome for r in results}
    if Linearizability.NOT_LINEARIZABLE in outcomes:
        outcome = Linearizability.NOT_LINEARIZABLE
    elif Linearizability.UNKNOWN in outcomes:
        outcome = Linearizability.UNKNOWN
    else:
        outcome = Linearizability.LINEARIZABLE
    failing = sorted(
        (r for r in results if r.outcome is not Linearizability.LINEARIZABLE),
        key=lambda r: (r.outcome is Linearizability.UNKNOWN, r.order),
    )
    return Verdict(
        outcome=outcome,
        model=getattr(model, "name", type(model).__name__),
        calls=list(calls),
        nemesis=list(nemesis),
        partitions=failing,
        checked=len(groups),
        operations=len(live),
        skipped=len(live) - covered,
        seconds=time.perf_counter() - started,
        timeout=timeout,
        linearizations={r.key: r.linearization for r in results if r.outcome is Linearizability.LINEARIZABLE}
        if keep_linearizations
        else {},
        unsearched=unsearched,
    )


class _Partition:
    """A partition's calls, the model's view of them, and its search (made when first advanced:
    a history with many partitions holds only the searches under way in memory)."""

    def __init__(
        self,
        calls: list[Call],
        ops: list[Op],
        model: Model[Any],
        compile_step: Callable[[Op], Transition] | None,
    ) -> None:
        self.calls = calls
        self.ops = ops
        self._model = model
        self._compile_step = compile_step
        self._run: Search | None = None

    @property
    def run(self) -> Search:
        if self._run is None:
            calls = self.calls
            steps = _transitions(calls, self.ops, self._model, self._compile_step)
            self._run = Search(steps, [c.start for c in calls], [c.end for c in calls], self._model.init())
        return self._run

    def advance(self, slices: int, deadline: float | None = None) -> bool:
        """Search on (see Search.advance); a model step that raised names its line."""
        try:
            return self.run.advance(slices, deadline)
        except _StepError as exc:
            c = self.calls[exc.index]
            raise HistoryError(f"{_line(c)}: {c.f}: {exc.cause}") from None

    def finish(self, keep: bool) -> PartitionResult:
        """The PartitionResult of the search: its result, or what it found before it was stopped
        (nothing, for a search never begun). `keep` False leaves a linearizable partition's
        `linearization` empty."""
        run = self._run
        found, order, states, culprit, explored = (
            run.stop() if run is not None else (Linearizability.UNKNOWN, [], [], None, 0)
        )
        calls, ops = self.calls, self.ops
        describe = self._model.describe_state
        return PartitionResult(
            key=ops[0].key if ops else None,
            outcome=found,
            calls=calls,
            linearization=[calls[i] for i in order]
            if found is not Linearizability.LINEARIZABLE or keep
            else [],
            states=[describe(s) for s in states] if found is not Linearizability.LINEARIZABLE else [],
            culprit=calls[culprit] if culprit is not None else None,
            culprit_op=ops[culprit] if culprit is not None else None,
            explored=explored,
            seconds=run.seconds if run is not None else 0.0,
            order=min(c.id for c in calls) if calls else 0,
        )


def _transitions(
    calls: Sequence[Call],
    ops: Sequence[Op],
    model: Model[Any],
    compile_step: Callable[[Op], Transition] | None,
) -> list[Transition]:
    if compile_step is None:
        return [_bind(model.step, op) for op in ops]
    steps: list[Transition] = []
    for c, op in zip(calls, ops, strict=True):
        try:
            steps.append(compile_step(op))
        except (ValueError, TypeError) as exc:
            raise HistoryError(f"{_line(c)}: {c.f}: {exc}") from None
    return steps


def _nothing(calls: Sequence[Call], live: Sequence[Call]) -> str:
    failed = len(calls) - len(live)
    if not calls:
        return "nothing to check: the history has no client operation (only nemesis events?)"
    if not live:
        return (
            f"nothing to check: all {failed} operation(s) failed (type fail: they took no effect), "
            "so no verdict can be reached"
        )
    if not any(c.status == "ok" for c in live):
        return (
            f"nothing to check: every one of the {len(live)} operation(s) ended in info (outcome "
            "unknown), so no result was observed"
        )
    return (
        f"nothing to check: none of the {len(live)} operation(s) that took effect is one the model checks"
        + (f" ({failed} failed)" if failed else "")
    )


# --------------------------------------------------------------------------- the search


class _StepError(Exception):
    def __init__(self, index: int, cause: Exception) -> None:
        super().__init__(index, cause)
        self.index = index
        self.cause = cause


def _undominated(seen: list[int], maybe: int) -> bool:
    """True (and `maybe` recorded) unless one of the last DOMINANCE_CHECKS sets in `seen` is a
    subset of `maybe`. Older sets are forgotten: pruning less never changes a verdict, and an
    unbounded scan made single steps slow enough to overrun the time budget."""
    absent = ~maybe
    for old in seen:
        if not old & absent:
            return False
    seen.append(maybe)
    if len(seen) > DOMINANCE_CHECKS:
        del seen[0]
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
) -> SearchResult:
    """The WGL search over operations 0..n-1 with call times `starts` and return times `ends`.

    `steps[i](state) -> (legal, next_state)`; `ends[i]` None means the
    operation may never have taken effect. Returns (outcome, the longest
    linearizable prefix as operation indices, the state after each, the
    culprit's index or None, steps explored); UNKNOWN once `deadline`
    (a time.perf_counter() value) has passed.
    """
    run = Search(steps, starts, ends, init)
    while not run.advance(1):
        if deadline is not None and time.perf_counter() > deadline:
            return run.stop()
    assert run.result is not None
    return run.result


class Search:
    """One partition's search, run a slice of CLOCK_EVERY steps at a time.

    Several partitions' searches take turns this way, so a partition that is
    quickly proven not linearizable is found while harder ones are still open,
    and one time budget covers them all.
    """

    def __init__(
        self, steps: Sequence[Transition], starts: Sequence[int], ends: Sequence[int | None], init: Any
    ) -> None:
        self._run = _search(steps, starts, ends, init)
        self._started = False
        self.result: SearchResult | None = None
        self.seconds = 0.0

    def advance(self, slices: int, deadline: float | None = None) -> bool:
        """Search up to `slices` × CLOCK_EVERY more steps, fewer once `deadline` (a
        time.perf_counter() value) has passed; True once decided (`result` is set)."""
        if self.result is not None:
            return True
        began = time.perf_counter()
        try:
            for _ in range(slices):
                self._run.send(None)
                self._started = True
                if deadline is not None and time.perf_counter() > deadline:
                    break
        except StopIteration as done:
            self.result = done.value
        finally:
            self.seconds += time.perf_counter() - began
        return self.result is not None

    def stop(self) -> SearchResult:
        """Give up: UNKNOWN, with the longest linearizable prefix found so far."""
        if self.result is None:
            if not self._started:
                self.result = (Linearizability.UNKNOWN, [], [], None, 0)
            else:
                try:
                    self._run.send(True)
                except StopIteration as done:
                    self.result = done.value
        assert self.result is not None
        return self.result


def _search(
    steps: Sequence[Transition], starts: Sequence[int], ends: Sequence[int | None], init: Any
) -> Generator[None, bool | None, SearchResult]:
    """`search` as a generator: it yields every CLOCK_EVERY steps; sent True, it stops (UNKNOWN)."""
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
                            if (yield):
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
                            if (yield):
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
                    if (yield):
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
