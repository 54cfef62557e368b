"""`contend bench`: registry and lock figures as ratios to raw round trips."""

from __future__ import annotations

import json
import sys

import pytest

import contend.benchmarks.locks as locks
from contend import cli
from contend.cli import main
from contend.commands.console import make_console
from contend.impl.catalog import MUTUAL_EXCLUSION, Implementation


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


class GivesUpWhenWaiting:
    """A lock whose try works and whose blocking acquire raises: what setnx_getset does when its
    SETNX retries run out under the bench's hot loop (SetnxError), forced here on every wait."""

    def __init__(self, client, key: str, ttl_ms: int) -> None:
        self.client, self.key, self.ttl_ms = client, key, ttl_ms

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        if blocking:
            raise RuntimeError("gave up waiting")
        return bool(self.client.set(self.key, "1", nx=True, px=self.ttl_ms))

    def release(self) -> None:
        self.client.delete(self.key)


def _giving_up(name: str, violates: frozenset[str]) -> Implementation:
    return Implementation(
        name, "lock", GivesUpWhenWaiting, "mutex", "gives up when waiting", violates=violates
    )


def test_a_lock_that_raises_under_contention_is_reported_not_a_traceback(capsys, monkeypatch, tmp_path):
    """The contended rate of a lock that raised is "raised", with what it raised: a known-bad one's
    defect leaves the run's exit code alone (0), a correct one's fails it (1); nothing is lost."""
    bad = _giving_up("gives_up_known_bad", frozenset({MUTUAL_EXCLUSION}))
    monkeypatch.setattr(locks, "lock_implementations", lambda: [bad])
    path = tmp_path / "bench.json"
    argv = ["bench", "lock", "--duration", "0.1", "--clients", "2", "--json", str(path)]
    assert main(argv) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "gives_up_known_bad (known-bad) raised under contention, so it has no contended rate: " in out
    assert "RuntimeError: gave up waiting (its defect)" in out
    (row,) = json.loads(path.read_text())["rows"]
    assert row["contended"] is None and row["contended_error"] == "RuntimeError: gave up waiting"

    correct = _giving_up("gives_up_correct", frozenset())
    monkeypatch.setattr(locks, "lock_implementations", lambda: [correct])
    assert main(argv) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert "gives_up_correct raised under contention, so it has no contended rate: RuntimeError" in out
    document = json.loads(path.read_text())
    assert document["verdict"] == "raised" and document["exit_code"] == 1
