"""The WGL search over one partition: Wing & Gong's algorithm with Lowe's memoization (as in Porcupine).

Calls and returns sit in one time-ordered doubly linked list; the search
linearizes a pending call when the model allows it, lifts the call (and its
return) out of the list, and backtracks when it meets a return whose call it
could not linearize. A cache of (linearized set, model state) pairs, the set a
Python int used as a bitset, prunes every configuration seen before. Info
operations (outcome unknown) have no return: they may be linearized at any
point after their call, or never.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

from contend.history.verdict import Linearizability

#: One operation's transition: state -> (legal, next state).
Transition = Callable[[Any], tuple[bool, Any]]

#: Earlier info-op sets a new configuration is compared with (dominance pruning).
DOMINANCE_CHECKS = 64

#: Search steps between looks at the clock.
CLOCK_EVERY = 4096


@dataclass(frozen=True, slots=True)
class SearchResult:
    """What a search found. `order` is the longest linearizable prefix as operation indices (a
    whole linearization when the outcome is linearizable), `states` the model state after each
    of its operations (left empty when linearizable), `culprit` the index of the first operation
    that fits after no such prefix, `explored` the search steps taken."""

    outcome: Linearizability
    order: list[int]
    states: list[Any]
    culprit: int | None
    explored: int


def search(
    steps: Sequence[Transition],
    starts: Sequence[int],
    ends: Sequence[int | None],
    init: Any,
    deadline: float | None = None,
) -> SearchResult:
    """The WGL search over operations 0..n-1 with call times `starts` and return times `ends`.

    `steps[i](state) -> (legal, next_state)`; `ends[i]` None means the
    operation may never have taken effect. The outcome is UNKNOWN once
    `deadline` (a time.perf_counter() value) has passed.
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
                self.result = SearchResult(Linearizability.UNKNOWN, [], [], None, 0)
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
        return SearchResult(Linearizability.LINEARIZABLE, [], [], None, 0)
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
                            return SearchResult(
                                Linearizability.LINEARIZABLE, order, [], None, explored + CLOCK_EVERY - clock
                            )
                        entry = nxt[head]
                        clock -= 1
                        if not clock:
                            clock = CLOCK_EVERY
                            explored += CLOCK_EVERY
                            if (yield):
                                return SearchResult(
                                    Linearizability.UNKNOWN, best_ops, best_states, None, explored
                                )
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
                                return SearchResult(
                                    Linearizability.UNKNOWN, best_ops, best_states, None, explored
                                )
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
                        return SearchResult(Linearizability.UNKNOWN, best_ops, best_states, None, explored)
    except Exception as exc:
        if i >= 0:
            raise StepError(i, exc) from exc
        raise
    culprit = ret_of[best_pos]
    return SearchResult(
        Linearizability.NOT_LINEARIZABLE,
        best_ops,
        best_states,
        culprit if culprit >= 0 else None,
        explored + CLOCK_EVERY - clock,
    )


def _sequential(steps: Sequence[Transition], order: list[int], state: Any) -> SearchResult:
    """No two operations overlap: the only linearization is the order they ran in."""
    states: list[Any] = []
    for k, i in enumerate(order):
        try:
            legal, state = steps[i](state)
        except Exception as exc:
            raise StepError(i, exc) from exc
        if not legal:
            return SearchResult(Linearizability.NOT_LINEARIZABLE, order[:k], states, i, k + 1)
        states.append(state)
    return SearchResult(Linearizability.LINEARIZABLE, order, [], None, len(order))


class StepError(Exception):
    """A model step raised: which operation (its index), and the exception."""

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
