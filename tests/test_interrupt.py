"""Stop signals held back by `interrupt.deferred()`: a step that must happen whole (a fault
applied and recorded in a stress run) is interrupted before or after, never in between."""

from __future__ import annotations

import os
import signal

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
