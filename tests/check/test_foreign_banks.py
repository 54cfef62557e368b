"""Banks written in styles the transaction machine had not seen (issue 40), judged from what the
server ran: the correct ones get no false alarm under several seeds, on Redis 6.2 (no key
specifications) and on Valkey (key specifications); the mutants are caught and named for what their
history shows."""

from __future__ import annotations

import pytest

from contend.check.battery import run_battery
from contend.check.framework import CheckOptions
from contend.impl.catalog import CONSISTENT_AUDIT, SERIALIZABLE
from contend.machines.family import family_machine
from contend.machines.hunt import run_once
from contend.subject.subject import user_subject

CORRECT = ["script_read_bank", "dotted_bank", "noisy_bank"]
#: module -> the names the schedule check may give its anomaly (the first is what it is built for)
MUTANTS = {
    "guard_debit_bank": ("write skew under an overdraft guard", "write skew"),
    "two_step_bank": ("money-moving crash", "read skew", "write skew"),
}


def machine(module: str, target):
    return family_machine(user_subject(f"tests.fixtures.foreign.{module}:make", "transaction", target))


@pytest.mark.slow
@pytest.mark.parametrize("module", CORRECT)
def test_a_correct_bank_passes_under_several_seeds(module, contend_target):
    for seed in range(3):
        _, violation, _ = run_once(machine(module, contend_target), contend_target, seed, 60, shrink=False)
        assert violation is None, f"seed {seed}: {violation}"


@pytest.mark.slow
@pytest.mark.parametrize("module", CORRECT)
def test_a_correct_bank_passes_on_a_server_with_key_specifications(module, valkey_target):
    _, violation, _ = run_once(machine(module, valkey_target), valkey_target, 0, 60, shrink=False)
    assert violation is None, str(violation)


@pytest.mark.slow
@pytest.mark.parametrize("module", sorted(MUTANTS))
def test_a_mutant_is_named_for_what_its_history_shows(module, contend_target, ns):
    subject = user_subject(f"tests.fixtures.foreign.{module}:make", "transaction", contend_target)
    (row,) = run_battery(contend_target, [subject], CheckOptions(shrink=False), ns, only_checks=["schedule"])
    (result,) = row.failed
    assert result.prop in (SERIALIZABLE, CONSISTENT_AUDIT), result.detail
    assert result.detail.startswith(MUTANTS[module]), result.detail
