"""contend.benchmarks.own_primitive: one seed of a twin is caught and said so."""

from __future__ import annotations

from pathlib import Path

from contend.benchmarks.own_primitive import main


def test_one_run_of_a_twin_is_caught(capsys, monkeypatch):
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    assert main(["--runs", "1", "--only", "idempotency_check_then_set"]) == 0
    assert "idempotency_check_then_set: caught 1/1" in capsys.readouterr().out
