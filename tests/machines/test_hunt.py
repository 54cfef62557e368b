"""contend.machines.hunt: how reliably, and how fast, the state machines catch known-bad implementations."""

from __future__ import annotations

import time
from dataclasses import replace

import pytest

from contend.impl.catalog import by_name
from contend.machines.family import family_machine
from contend.machines.hunt import SearchStopped, hunt, run_once


def test_run_once_catches_a_known_bad_registry(contend_target):
    machine = family_machine(by_name("naive"))
    seconds, violation, failed = run_once(machine, contend_target, seed=0, max_examples=500, shrink=False)
    assert violation is not None and violation.property in by_name("naive").claims
    assert failed is not None and seconds > 0


def test_run_once_finds_nothing_wrong_with_a_correct_one(contend_target):
    machine = family_machine(by_name("lua"))
    _, violation, failed = run_once(machine, contend_target, seed=0, max_examples=20, shrink=False)
    assert violation is None and failed is None


@pytest.mark.slow
def test_hunt_reports_catches_times_and_the_shrunk_size(contend_target):
    lines: list[str] = []
    # exists_then_set: caught and shrunk in a few seconds (shrinking is most of a hunt's time)
    result = hunt(by_name("exists_then_set"), contend_target, runs=2, max_examples=500, on_run=lines.append)
    assert result.caught == 2 and len(result.times) == 2 and len(lines) == 2
    assert result.median <= result.worst
    assert result.clients is not None and 1 <= result.clients <= 3 and result.round_trips
    assert result.message.startswith("mutual-exclusion")


def test_a_run_past_its_deadline_stops_between_two_examples(contend_target):
    machine = family_machine(by_name("lua"))
    with pytest.raises(SearchStopped) as stopped:
        run_once(
            machine, contend_target, seed=0, max_examples=10_000, shrink=False, deadline=time.monotonic()
        )
    assert stopped.value.why == "budget"


def test_the_seeds_past_the_budget_are_counted_as_not_run(contend_target):
    lines: list[str] = []
    result = hunt(
        by_name("exists_then_set"), contend_target, runs=3, max_examples=300, on_run=lines.append,
        deadline=time.monotonic(),
    )  # fmt: skip
    assert result.not_run == 3 and result.done == 0 and result.caught == 0
    assert "not run: budget" in result.line() and lines == ["exists_then_set seed 0: the time budget ran out"]


def test_a_known_bad_transaction_counts_only_when_caught_for_its_anomaly(contend_target):
    lines: list[str] = []
    misnamed = replace(by_name("transfer_no_watch"), anomaly="G0")  # it is a lost update, not G0
    result = hunt(misnamed, contend_target, runs=1, max_examples=300, on_run=lines.append, shrink=False)
    assert result.caught == 0 and result.done == 1
    assert "found serializable but not G0: lost update" in lines[0]
