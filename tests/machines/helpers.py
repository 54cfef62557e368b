"""Driving a state machine by hand, outside Hypothesis: a forced schedule instead of a search."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def step_while(m: Any, index: int, *labels: str) -> None:
    """Step client `index` of machine `m` while its operation in flight is one of `labels`
    (label prefixes), as the machine's own `advance` rule steps a client."""
    for _ in range(50):
        if not m.in_flight.get(index, "").startswith(labels):
            return
        m.before_step(index)
        m.scheduler.step(index)
        m._after_progress(index)
    raise AssertionError(f"client {index} still in {m.in_flight.get(index)} after 50 round trips")


@contextmanager
def driven_by_hand(m: Any) -> Iterator[Any]:
    """Machine `m` for a test to drive by hand; at the end it is torn down as after a violation:
    clean-up only, without the end-of-example judgements (what the test drove it to is for the
    test to assert)."""
    try:
        yield m
    finally:
        m.failed = True
        m.teardown()
