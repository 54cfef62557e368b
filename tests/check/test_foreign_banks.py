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
from contend.subject.resolve import user_subject

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


def test_a_command_the_server_cannot_place_leaves_only_serializable_unjudged(redis62_target):
    """Redis 6.2 cannot say which of COPY's keys it writes. Where it touches a balance, the schedule
    check is inconclusive for serializable alone, naming COPY; elsewhere it changes nothing."""
    options = CheckOptions(shrink=False, schedule_examples=15)
    rows = {}
    ns = redis62_target.namespace()
    try:
        for factory in ("make", "make_elsewhere"):
            subject = user_subject(
                f"tests.fixtures.foreign.receipt_bank:{factory}", "transaction", redis62_target
            )
            (rows[factory],) = run_battery(redis62_target, [subject], options, ns, only_checks=["schedule"])
    finally:
        ns.cleanup()
    (touched,) = rows["make"].results
    assert touched.status == "inconclusive", touched.detail
    assert touched.detail.startswith(
        "inconclusive (serializable not judged where COPY writes some of its keys, and the server's table (no key "
        "specifications) does not say which (it touched a"
    ), touched.detail
    assert "applies-once, consistent-audit held in 15 Hypothesis-chosen interleavings" in touched.detail
    assert rows["make_elsewhere"].verdict == "pass", rows["make_elsewhere"].results[0].detail


def test_the_same_command_is_placed_by_a_server_with_key_specifications(valkey_target):
    subject = user_subject("tests.fixtures.foreign.receipt_bank:make", "transaction", valkey_target)
    options = CheckOptions(shrink=False, schedule_examples=15)
    ns = valkey_target.namespace()
    try:
        (row,) = run_battery(valkey_target, [subject], options, ns, only_checks=["schedule"])
    finally:
        ns.cleanup()
    assert row.verdict == "pass", row.results[0].detail


@pytest.mark.slow
def test_an_async_bank_passes_the_same_battery(contend_target, ns):
    subject = user_subject("tests.fixtures.async_foreign.watch_bank:make", "transaction", contend_target)
    assert subject.asynchronous
    options = CheckOptions(shrink=False, schedule_examples=30, model_ops=100, burst_names_per_client=20)
    (row,) = run_battery(contend_target, [subject], options, ns)
    assert [r.check for r in row.results] == ["model", "burst", "bad-input", "lost-reply", "schedule"]
    assert row.verdict == "pass", {r.check: r.detail for r in row.results if not r.passed}


@pytest.mark.slow
def test_an_async_bank_without_watch_is_a_lost_update(contend_target, ns):
    subject = user_subject("tests.fixtures.async_foreign.no_watch_bank:make", "transaction", contend_target)
    (row,) = run_battery(contend_target, [subject], CheckOptions(shrink=False), ns, only_checks=["schedule"])
    (result,) = row.failed
    assert result.prop == SERIALIZABLE and result.detail.startswith("lost update (G-single): "), result.detail
