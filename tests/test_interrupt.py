"""Stop signals held back by `interrupt.deferred()`: a step that must happen whole (a fault
applied and recorded in a stress run) is interrupted before or after, never in between."""

from __future__ import annotations

import gc
import os
import signal
import sys
import threading

import pytest

from contend import interrupt


@pytest.fixture
def handlers():
    restore = interrupt.install()
    yield
    restore()
    interrupt.STOP.clear()


def test_a_signal_inside_a_deferred_block_is_raised_when_it_ends(handlers):
    done = []
    with pytest.raises(interrupt.Interrupted) as info, interrupt.deferred():
        os.kill(os.getpid(), signal.SIGINT)
        done.append("applied")
        done.append("recorded")
    assert done == ["applied", "recorded"] and info.value.code == 130
    assert interrupt.STOP.is_set()


def test_without_a_signal_the_block_just_ends(handlers):
    with interrupt.deferred():
        pass
    assert not interrupt.STOP.is_set()


def test_a_signal_outside_any_block_is_raised_at_once(handlers):
    with pytest.raises(interrupt.Interrupted):
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):  # the handler runs at the next bytecode boundaries
            pass


class SignalsWhenCollected:
    """Garbage in a reference cycle whose finalizer sends a stop signal to this process, so the
    signal is handled inside `__del__`: in the main thread, wherever the collector runs."""

    last_thread: str | None = None

    def __init__(self, signum: int) -> None:
        self.signum = signum
        self.cycle = self

    def __del__(self) -> None:
        SignalsWhenCollected.last_thread = threading.current_thread().name
        os.kill(os.getpid(), self.signum)
        for _ in range(1000):  # the handler runs here, at the next bytecode boundaries
            pass


def test_a_signal_inside_a_finalizer_is_remembered_not_lost(handlers, monkeypatch):
    """Raised inside `__del__`, the exception would only be printed by Python and the signal lost:
    instead STOP is set and `arrived()` names it, for the command to exit 130/143 with."""
    unraisable = []
    monkeypatch.setattr(sys, "unraisablehook", unraisable.append)
    SignalsWhenCollected(signal.SIGTERM)
    gc.collect()
    assert SignalsWhenCollected.last_thread == threading.main_thread().name
    assert interrupt.STOP.is_set() and unraisable == []
    caught = interrupt.arrived()
    assert caught is not None and caught.code == 143


def test_arrived_is_none_without_a_signal_and_cleared_by_install(handlers):
    assert interrupt.arrived() is None
    with pytest.raises(interrupt.Interrupted):
        os.kill(os.getpid(), signal.SIGINT)
        for _ in range(1000):
            pass
    assert interrupt.arrived().code == 130
    interrupt.install()()  # install, then restore at once: a new run starts clean
    assert interrupt.arrived() is None
