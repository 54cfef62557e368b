"""Who goes next: the decision a schedule is made of.

A chooser is `choose(current, runnable) -> client index`, where `current` is
the client that took the previous step (None at first) and `runnable` the
clients that can step now, in index order.

Every chooser here sees the candidates in the same order: the current client
first (when it can still run), then the others by index. Drawing index 0 thus
means "keep running the current client", so Hypothesis, which shrinks draws
towards 0, shrinks a schedule towards fewer context switches.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

Chooser = Callable[[int | None, list[int]], int]


def candidates(current: int | None, runnable: Sequence[int]) -> list[int]:
    """The current client first (if runnable), then the rest by index."""
    if current is not None and current in runnable:
        return [current, *(i for i in runnable if i != current)]
    return list(runnable)


class DrawChooser:
    """Hypothesis draws an index into the candidates at every decision (controller thread only)."""

    def __init__(self, data: Any) -> None:
        self.data = data

    def __call__(self, current: int | None, runnable: list[int]) -> int:
        from hypothesis import strategies as st

        options = candidates(current, runnable)
        if len(options) == 1:
            return options[0]
        return options[self.data.draw(st.integers(0, len(options) - 1))]


class ReplayDiverged(AssertionError):
    """A replayed schedule names a client that cannot run at that point."""


class ReplayChooser:
    """Follow a recorded schedule (a list of client indexes), then keep the current client."""

    def __init__(self, schedule: Sequence[int]) -> None:
        self.schedule = list(schedule)
        self.position = 0

    def __call__(self, current: int | None, runnable: list[int]) -> int:
        if self.position < len(self.schedule):
            wanted = self.schedule[self.position]
            self.position += 1
            if wanted not in runnable:
                raise ReplayDiverged(
                    f"step {self.position - 1} of the schedule names client {wanted}, "
                    f"but only {runnable} can run: the code under test changed?"
                )
            return wanted
        return candidates(current, runnable)[0]


class RandomWalk:
    """A uniformly random runnable client at every decision."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)

    def __call__(self, current: int | None, runnable: list[int]) -> int:
        return self.rng.choice(runnable)


class PCTChooser:
    """Probabilistic Concurrency Testing (Burckhardt et al., ASPLOS 2010).

    Clients get distinct random priorities; the highest-priority runnable client
    always runs; at d-1 change points, chosen at random among the first
    `max_steps` steps, the running client's priority drops below all others.
    A bug of depth d among n clients and k steps is found with probability at
    least 1/(n·k^(d-1)) per run.
    """

    def __init__(self, clients: int, depth: int, max_steps: int, seed: int) -> None:
        if depth < 1:
            raise ValueError(f"PCT depth must be >= 1, got {depth}")
        rng = random.Random(seed)
        ranks = list(range(depth, depth + clients))
        rng.shuffle(ranks)
        self.priority = dict(enumerate(ranks))
        self.change_points = {rng.randrange(max(1, max_steps)): depth - 1 - i for i in range(depth - 1)}
        self.steps = 0

    def __call__(self, current: int | None, runnable: list[int]) -> int:
        for i in runnable:
            self.priority.setdefault(i, len(self.priority) + 1000)
        chosen = max(runnable, key=lambda i: self.priority[i])
        if self.steps in self.change_points:
            self.priority[chosen] = self.change_points[self.steps]
            chosen = max(runnable, key=lambda i: self.priority[i])
        self.steps += 1
        return chosen


class BoundedPreemption:
    """Exhaustive search of the schedules with at most `max_preemptions` preemptions.

    A preemption is a switch away from a client that could have kept running.
    `next_run()` gives a chooser for the next schedule to try (depth first, as
    loom does, replaying the common prefix); None once every schedule within
    the bound was tried.
    """

    def __init__(self, max_preemptions: int) -> None:
        if max_preemptions < 0:
            raise ValueError(f"max_preemptions must be >= 0, got {max_preemptions}")
        self.max_preemptions = max_preemptions
        # One entry per decision of the last run: (number of options, chosen, could keep current).
        self._stack: list[tuple[int, int, bool]] = []
        self._last: _PrefixChooser | None = None
        self.runs = 0

    def next_run(self) -> Chooser | None:
        if self._last is not None:
            del self._stack[self._last.depth :]  # decisions the last run never reached
            if not self._advance():
                return None
        self.runs += 1
        self._last = _PrefixChooser(self)
        return self._last

    def _advance(self) -> bool:
        while self._stack:
            size, chosen, kept = self._stack.pop()
            if chosen + 1 < size:
                self._stack.append((size, chosen + 1, kept))
                if self._preemptions() <= self.max_preemptions:
                    return True
                self._stack.pop()
        return False

    def _preemptions(self) -> int:
        return sum(1 for _, chosen, kept in self._stack if kept and chosen > 0)


class _PrefixChooser:
    """Replays the search's prefix, then always keeps the current client."""

    def __init__(self, search: BoundedPreemption) -> None:
        self.search = search
        self.depth = 0

    def __call__(self, current: int | None, runnable: list[int]) -> int:
        options = candidates(current, runnable)
        kept = current is not None and current in runnable
        stack = self.search._stack
        if self.depth < len(stack):
            chosen = min(stack[self.depth][1], len(options) - 1)
            stack[self.depth] = (len(options), chosen, kept)
        else:
            chosen = 0
            stack.append((len(options), 0, kept))
        self.depth += 1
        return options[chosen]
