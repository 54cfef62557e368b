"""Linearizability checking: a history against a model, partition by partition (as in Porcupine).

The history is split by the model's `partition` (P-compositionality: a history
is linearizable iff each partition is) and each partition is searched on its
own by Wing & Gong's search with Lowe's memoization (`contend.history.search`).
The searches take turns under one time budget: the first partition proven not
linearizable settles the verdict, and when the budget is spent the partitions
still open make it "unknown", never a hang.

Info operations (outcome unknown) have no return: they may be linearized at any
point after their call, or never. Failed operations are dropped, as Knossos
does: `fail` means the operation did not take effect, and it constrains
nothing. (Porcupine's etcd model reads a failed cas as "the value was not the
expected one"; to keep that evidence, record such a cas as `ok` with a false
result, which the cas-register model checks.)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from contend.history.records import Call, HistoryError, Paired, Record, pair
from contend.history.search import Search, SearchResult, StepError, Transition
from contend.history.verdict import Linearizability, PartitionResult, Verdict
from contend.models.base import Model, Op

#: A turn of the partitions' searches is at most this many slices of CLOCK_EVERY steps each.
MAX_SLICES = 16


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
    return check_paired(
        pair(records),
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
    A history in which no operation took effect (each failed, ended in info
    or never completed) is linearizable, as Knossos and Porcupine have it:
    leaving every one out is a linearization.

    Raises HistoryError (naming the line) when an operation is not one the
    model knows, and NothingToCheck when operations took effect but the model
    searches none of them.
    """
    started = time.perf_counter()
    deadline = None if timeout is None else started + timeout
    live = [c for c in calls if c.status != "fail"]
    ops = _model_ops(live, model)
    partitions = _partitions(live, ops, model) if any(c.status == "ok" for c in live) else []
    if not partitions and any(c.status == "ok" for c in live):
        raise NothingToCheck(
            f"nothing to check: none of the {len(live)} operation(s) that took effect is one the model "
            "checks" + (f" ({len(calls) - len(live)} failed)" if len(calls) > len(live) else "")
        )
    results, unsearched = _take_turns(partitions, deadline, all_partitions, keep_linearizations)
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
        checked=len(partitions),
        operations=len(live),
        skipped=len(live) - sum(len(p.calls) for p in partitions) if partitions else 0,
        seconds=time.perf_counter() - started,
        timeout=timeout,
        linearizations={r.key: r.linearization for r in results if r.outcome is Linearizability.LINEARIZABLE}
        if keep_linearizations
        else {},
        unsearched=unsearched,
    )


def _model_ops(live: Sequence[Call], model: Model[Any]) -> list[Op]:
    """The model's view of each call (its `adapt` applied); a call it cannot read names its line."""
    adapt: Callable[[Op], Op] | None = getattr(model, "adapt", None)
    ops: list[Op] = []
    for c in live:
        op = c.op()
        if adapt is not None:
            try:
                op = adapt(op)
            except (ValueError, TypeError, IndexError) as exc:
                raise HistoryError(f"{c.where()}: {c.f}: {exc}") from None
        ops.append(op)
    return ops


def _partitions(live: Sequence[Call], ops: Sequence[Op], model: Model[Any]) -> list[_Partition]:
    """The model's partitions of `ops` (the empty ones dropped), each with its calls."""
    position = {id(op): k for k, op in enumerate(ops)}
    try:
        groups = [g for g in model.partition(ops) if g]
    except TypeError as exc:  # a key the model cannot tell apart: an object where a name goes
        raise HistoryError(f"cannot partition the history by key: {exc}") from None
    compile_step: Callable[[Op], Transition] | None = getattr(model, "compile_step", None)
    partitions: list[_Partition] = []
    for group in groups:
        try:
            members = [position[id(op)] for op in group]
        except KeyError:
            raise TypeError(
                f"{type(model).__name__}.partition must return the Op objects it was given"
            ) from None
        partitions.append(_Partition([live[k] for k in members], group, model, compile_step))
    return partitions


def _take_turns(
    pending: list[_Partition], deadline: float | None, all_partitions: bool, keep: bool
) -> tuple[list[PartitionResult], int]:
    """Search the partitions in turns of doubling length until each is decided, one is proven not
    linearizable (unless `all_partitions`), or `deadline` passes. (the results, how many
    partitions were left unsearched because one was proven not linearizable)"""
    results: list[PartitionResult] = []
    slices = 1
    stopped = timed_out = False
    while pending and not (stopped or timed_out):
        still: list[_Partition] = []
        for k, part in enumerate(pending):
            if part.advance(slices, deadline):
                result = part.finish(keep)
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
    if stopped:
        return results, len(pending)
    # The budget ran out: what each open search found so far.
    results.extend(part.finish(keep) for part in pending)
    return results, 0


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
        except StepError as exc:
            c = self.calls[exc.index]
            raise HistoryError(f"{c.where()}: {c.f}: {exc.cause}") from None

    def finish(self, keep: bool) -> PartitionResult:
        """The PartitionResult of the search: its result, or what it found before it was stopped
        (nothing, for a search never begun). `keep` False leaves a linearizable partition's
        `linearization` empty."""
        run = self._run
        found = run.stop() if run is not None else SearchResult(Linearizability.UNKNOWN, [], [], None, 0)
        calls, ops = self.calls, self.ops
        linearizable = found.outcome is Linearizability.LINEARIZABLE
        describe = self._model.describe_state
        return PartitionResult(
            key=ops[0].key if ops else None,
            outcome=found.outcome,
            calls=calls,
            linearization=[calls[i] for i in found.order] if not linearizable or keep else [],
            states=[describe(s) for s in found.states] if not linearizable else [],
            culprit=calls[found.culprit] if found.culprit is not None else None,
            culprit_op=ops[found.culprit] if found.culprit is not None else None,
            explored=found.explored,
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
            raise HistoryError(f"{c.where()}: {c.f}: {exc}") from None
    return steps


def _bind(step: Callable[[Any, Op], tuple[bool, Any]], op: Op) -> Transition:
    return lambda state: step(state, op)
