"""contend.machines.hunt: how reliably, and how fast, the state machines catch known-bad implementations."""

from __future__ import annotations

import pytest

from contend.impl.catalog import by_name
from contend.machines.family import family_machine
from contend.machines.hunt import hunt, main, run_once


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


@pytest.mark.slow
def test_main_prints_one_line_per_implementation(capsys):
    assert main(["--runs", "1", "--max-examples", "300", "--only", "exists_then_set"]) == 0
    out = capsys.readouterr().out
    assert "hunting on" in out and "exists_then_set" in out and "caught 1/1" in out
