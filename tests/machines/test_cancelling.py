"""Cancellation rules in the async machines: correct async code passes with them, the #3847 kind
of release is caught, and synchronous machines do not get them (their examples stay as they were)."""

from __future__ import annotations

import pytest
from hypothesis.stateful import run_state_machine_as_test

from contend.impl.catalog import async_by_name, by_name
from contend.machines.base import PropertyViolated
from contend.machines.family import family_machine
from contend.machines.settings import machine_settings


@pytest.mark.parametrize("name", ["async_token", "async_lua"])
def test_correct_async_code_survives_cancelled_operations(contend_target, name):
    machine = family_machine(async_by_name(name))
    assert hasattr(machine, "cancel_release" if name == "async_token" else "cancel_register")
    run_state_machine_as_test(lambda: machine(contend_target), settings=machine_settings(150, shrink=False))  # type: ignore[arg-type]


def test_a_release_that_clears_its_token_first_is_caught(contend_target):
    machine = family_machine(async_by_name("async_early_clear"))
    with pytest.raises(PropertyViolated) as info:
        run_state_machine_as_test(
            lambda: machine(contend_target), settings=machine_settings(150, shrink=False)
        )  # type: ignore[arg-type]
    assert info.value.property == "crash-liveness" and "the lease is orphaned" in info.value.detail


def test_synchronous_machines_have_no_cancellation_rule():
    for name in ("token", "lua"):
        machine = family_machine(by_name(name))
        assert not hasattr(machine, "cancel_release") and not hasattr(machine, "cancel_register")
        assert not machine.asynchronous
