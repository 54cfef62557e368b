"""Run callables in threads released at the same instant: the cheap way to provoke races.

Each callable should already hold its own connected client: a thread that must
first open a connection starts late and the burst degrades into a queue. A
`threading.Barrier` releases all of them together.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CallResult:
    """What one callable returned, or the exception it raised."""

    value: Any = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def burst(calls: Sequence[Callable[[], Any]], timeout: float = 60.0) -> list[CallResult]:
    """Run every call in its own thread, all released by one barrier; outcomes in order."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[CallResult] = [CallResult() for _ in calls]

    def run(i: int, call: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout)
            outcomes[i] = CallResult(value=call())
        except BaseException as exc:
            outcomes[i] = CallResult(error=exc)

    threads = [threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        if t.is_alive():
            raise TimeoutError(f"a burst thread was still running after {timeout} s")
    return outcomes


def errors_summary(outcomes: Sequence[CallResult]) -> str:
    """'3 of 16 raised RegistrationError: Failed to register ...' or ''."""
    failed = [o.error for o in outcomes if o.error is not None]
    if not failed:
        return ""
    first = failed[0]
    return f"{len(failed)} of {len(outcomes)} raised {type(first).__name__}: {first}"
