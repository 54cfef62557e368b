"""The CI correctness gate: each family's state machine over every implementation in the catalog.

A correct implementation must keep its properties over every interleaving
Hypothesis tries (the `contend-ci` profile: derandomized, bounded). A known-bad one
must be caught, and for a property the catalog says it violates.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from contend.impl.catalog import FIFO, IMPLEMENTATIONS, SERIALIZABLE, by_name
from contend.machines.base import PropertyViolated
from contend.machines.family import family_machine
from contend.machines.settings import machine_settings

#: The gate searches hundreds of interleavings an implementation: the full suite and CI run it,
#: the quick tier (`pytest -m "not slow"`) does not.
pytestmark = pytest.mark.slow

FAMILIES = ("registry", "lock", "semaphore", "single_flight", "transaction", "queue", "rate_limiter")
#: In the soak tier only (`pytest -m soak`): bank_lock_first takes the most round trips of the banks
#: (about 15 s for the gate's 50 examples) and bank_audit_multi is bank_lua with another summary.
SOAK = {"bank_lock_first", "bank_audit_multi"}


def _param(impl):
    return pytest.param(impl, id=impl.name, marks=pytest.mark.soak if impl.name in SOAK else ())


CORRECT = [_param(i) for i in IMPLEMENTATIONS if i.family in FAMILIES and not i.known_bad]
KNOWN_BAD = [_param(i) for i in IMPLEMENTATIONS if i.family in FAMILIES and i.known_bad]


def gate_settings(max_examples: int, *, shrink: bool | None = None) -> settings:
    """The loaded profile (contend-ci by default), with what state machines need."""
    return machine_settings(max_examples, shrink=shrink, derandomize=None, parent=settings.default)


@pytest.mark.parametrize("impl", CORRECT)
def test_correct_implementation_keeps_its_properties(impl, contend_target):
    machine = family_machine(impl)
    # contend-ci: 50 interleaved runs per implementation (200 took 40-166 s each under load and
    # 100 still made the gate the largest share of the suite; tests/check/test_battery.py runs the
    # schedule check on each too, and the thorough profile, contend-thorough, runs 2,000).
    examples = settings.default.max_examples
    run_state_machine_as_test(lambda: machine(contend_target), settings=gate_settings(examples))


@pytest.mark.parametrize("impl", KNOWN_BAD)
def test_known_bad_implementation_is_caught(impl, contend_target):
    machine = family_machine(impl)
    with pytest.raises(PropertyViolated) as info:
        run_state_machine_as_test(
            lambda: machine(contend_target),
            settings=gate_settings(2000, shrink=False),
        )
    broken = info.value.property
    assert broken in impl.violates, (
        f"{impl.name} was caught breaking {broken!r}, which the catalog does not list"
    )
    if impl.anomaly and broken == SERIALIZABLE:
        assert info.value.detail.startswith(impl.anomaly), info.value.detail


def test_fifo_is_checked_not_assumed(contend_target):
    """The unfair semaphore, made to claim FIFO, must be caught serving a later asker first."""
    unfair = by_name("semaphore")
    machine = family_machine(replace(unfair, claims=frozenset(unfair.claims) | {FIFO}))
    with pytest.raises(PropertyViolated) as info:
        run_state_machine_as_test(
            lambda: machine(contend_target),
            settings=gate_settings(2000, shrink=False),
        )
    assert info.value.property == FIFO
