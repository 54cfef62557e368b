"""The polling adapter's timeout counts from the call: the library's tries are all it spends."""

from __future__ import annotations

import asyncio

import pytest

from contend.adapters import polling


class SlowTries:
    """A library try that is always refused and takes `seconds` of a clock of its own."""

    def __init__(self, seconds: float) -> None:
        self.now, self.seconds, self.tries = 0.0, seconds, 0

    def monotonic(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds

    def __call__(self) -> bool:
        self.tries += 1
        self.now += self.seconds
        return False


@pytest.mark.parametrize(("try_seconds", "timeout"), [(0.15, 0.2), (0.0, 0.05), (0.3, 0.2)])
def test_no_try_starts_after_the_timeout_counted_from_the_call(monkeypatch, try_seconds, timeout):
    tries = SlowTries(try_seconds)
    monkeypatch.setattr(polling.time, "monotonic", tries.monotonic)
    monkeypatch.setattr(polling.time, "sleep", tries.sleep)
    assert polling.poll(tries, True, timeout) is False
    # The last try started before the deadline; only that try's own time may run past it.
    assert tries.now <= timeout + try_seconds + 1e-9
    assert tries.tries >= 1


def test_the_async_poll_counts_from_the_call_too(monkeypatch):
    tries = SlowTries(0.15)

    class Loop:
        def time(self) -> float:
            return tries.now

    async def sleep(seconds: float) -> None:
        tries.sleep(seconds)

    async def slow_try() -> bool:
        return tries()

    monkeypatch.setattr(polling.asyncio, "get_running_loop", Loop)
    monkeypatch.setattr(polling.asyncio, "sleep", sleep)
    assert asyncio.run(polling.poll_async(slow_try, True, 0.2)) is False
    assert tries.tries == 2 and tries.now <= 0.2 + 0.15 + 1e-9
