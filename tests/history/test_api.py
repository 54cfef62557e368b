"""The front door of contend.history: a file checked against a model by name, calls against a model."""

from __future__ import annotations

from pathlib import Path

import pytest

import contend.history as history
from contend.history.models import Options
from contend.models.cas_register import CasRegisterModel

DATA = Path(__file__).resolve().parents[1] / "data"


def test_check_a_file_by_model_name():
    good = history.check_file(DATA / "etcd_002.log", "cas-register")
    assert good.exit_code == 0 and good.verdict is not None
    assert good.verdict.outcome is history.Linearizability.LINEARIZABLE
    bad = history.check_file(DATA / "etcd_000.log", "cas-register", timeout=10)
    assert bad.exit_code == 1 and isinstance(bad.verdict, history.Verdict)
    assert bad.verdict.culprit is not None and bad.verdict.culprit.where() == "line 85"


def test_the_models_invariants_run_and_only_them_with_linear_only():
    checked = history.check_file(DATA / "registry.jsonl", "registry", linear_only=True)
    assert checked.verdict is None and checked.exit_code == 1
    assert checked.invariants == ["registry ids", "registry errors"] and len(checked.violations) == 2


def test_unknown_operations_are_refused_unless_lenient():
    with pytest.raises(history.HistoryError, match="the kv model does not know the operation"):
        history.check_file(DATA / "etcd_000.log", "kv")
    lenient = history.check_file(DATA / "etcd_000.log", "kv", lenient=True)
    assert lenient.lenient_skipped == {"cas": 35} and lenient.verdict is not None
    with pytest.raises(history.HistoryError, match="--ttl-ms compares lease lengths"):
        history.check_file(DATA / "kv_ok.edn", "kv", options=Options(ttl_ms=10))


def test_check_calls_against_a_model_object():
    calls = history.pair(history.read_history(DATA / "etcd_002.log")).calls
    verdict = history.check_calls(calls, CasRegisterModel(), timeout=10)
    assert verdict.outcome is history.Linearizability.LINEARIZABLE and verdict.operations == len(calls) - sum(
        c.status == "fail" for c in calls
    )
