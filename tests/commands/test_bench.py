"""`contend bench`: registry and lock figures as ratios to raw round trips."""

from __future__ import annotations

import json
import sys

import pytest

from contend import cli
from contend.cli import main
from contend.commands.console import make_console


@pytest.fixture(autouse=True)
def as_in_a_log(monkeypatch):
    """contend's stdout as a CI log has it, tables whole: in pytest-xdist's workers $COLUMNS is 80,
    and contend.cli's console, made at import, fits the table to it, wrapping its headers
    ('PING /s, same slices' over three lines) wherever the worker imported contend.cli first."""
    monkeypatch.delenv("COLUMNS", raising=False)
    monkeypatch.setattr(cli, "stdout", make_console(sys.stdout))


@pytest.mark.slow
def test_bench_registry_reports_ratios(capsys, tmp_path):
    out = tmp_path / "bench.json"
    code = main(
        ["bench", "registry", "--duration", "0.2", "--clients", "2", "--batch", "100", "--json", str(out)]
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert data["raw_one"]["ops"] > 0
    names = {row["name"] for row in data["rows"]}
    assert {"naive", "watch", "lock_first", "lua"} <= names
    for row in data["rows"]:
        assert row["one_ratio"] > 0 and row["batch_seconds"] > 0
    out = " ".join(capsys.readouterr().out.split())
    assert "× INCR, same slices: the median" in out and "not the title's rate" in out, (
        "each ratio names its baseline"
    )


@pytest.mark.slow
def test_bench_locks_reports_the_token_target(capsys):
    assert main(["bench", "lock", "--duration", "0.2", "--clients", "2"]) == 0
    out = capsys.readouterr().out
    assert "target ≥ 0.45×" in out
    assert "its baseline is that row's PING column" in " ".join(out.split()), "each ratio names its baseline"


def test_bench_gate_prints_both_gates_as_ratios_in_one_run(capsys, tmp_path):
    path = tmp_path / "gate.json"
    assert main(["bench", "gate", "--json", str(path)]) == 0
    out = capsys.readouterr().out
    assert "redis-py" in out and "redis.asyncio" in out and "the async gate's overhead is" in out
    doc = json.loads(path.read_text())
    assert doc["family"] == "gate" and len(doc["sync_raw"]) == len(doc["async_gated"]) == 5
    assert set(doc["ratios"]) == {
        "sync gated / sync raw",
        "async gated / async raw",
        "async gate overhead / sync gate overhead",
    }
