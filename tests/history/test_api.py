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


# --------------------------------------------------------------------------- the corpus
#
# Histories in the shapes Jepsen writes (tests/data/jepsen/, written for this suite; the etcd
# logs are Porcupine's test data), each with the verdict Jepsen's checker (Knossos) or
# Porcupine gives it. Where each expectation comes from:
#
# REGISTER  Porcupine, porcupine_test.go TestRegisterModel: the 6.824 quiz example is Ok; with
#           write 200, read 200, then read 0 after the read of 200 returned, Illegal.
# ETCD      Porcupine, porcupine_test.go TestEtcdJepsen000 (false) and TestEtcdJepsen002 (true).
# FAILED    Knossos, history.clj `without-failures` drops every :fail op before the search, and
#           wgl.clj `check` answers {:valid? true} once no entry is left to linearize: a
#           history whose every operation failed is valid. Porcupine, checker.go checkParallel:
#           no partition to check is Ok.
# PENDING   Knossos, history.clj `with-synthetic-infos` completes an invoke that never returned
#           with an :info, and wgl.clj `check` answers {:valid? true} when the search reaches
#           the :info entries ("no more chances to fail"): ops that may or may not have taken
#           effect are left out. Porcupine, porcupine_test.go parseJepsenLog gives every call
#           still open at the end an `unknown` return, which its etcd model accepts.
# NOTHING   No client operation at all: Porcupine's checkParallel returns Ok for an empty
#           history, and Knossos's `check` {:valid? true} (nothing left to linearize);
#           contend says so with a warning that nothing was checked.
# INFO      Jepsen's history README (Operation Semantics): an :info "may do either". Knossos
#           linearizes a crashed op at most once, anywhere after its invocation: a timed-out
#           write that a later read saw is valid, but once seen it cannot be undone.

JEPSEN = DATA / "jepsen"
CORPUS = [
    # file, model, exit code, the verdict's line starts with, source
    ("register_list_comments.edn", "cas-register", 0, "linearizable: 4 operations", "REGISTER"),
    ("register_vector_stale.edn", "cas-register", 1, "not linearizable: 4 operations", "REGISTER"),
    ("register_stale.jsonl", "cas-register", 1, "not linearizable: 4 operations", "REGISTER"),
    ("../etcd_000.log", "cas-register", 1, "not linearizable", "ETCD"),
    ("../etcd_002.log", "cas-register", 0, "linearizable", "ETCD"),
    (
        "cas_all_failed.edn",
        "cas-register",
        0,
        "linearizable: 0 of 7 operations took effect; 7 failed",
        "FAILED",
    ),
    (
        "cas_pending_write.edn",
        "cas-register",
        0,
        "linearizable: 0 of 7 operations took effect; 1 pending, 6 failed",
        "PENDING",
    ),
    (
        "cas_pending_write.jsonl",
        "cas-register",
        0,
        "linearizable: 0 of 7 operations took effect; 1 pending, 6 failed",
        "PENDING",
    ),
    (
        "etcd_pending.log",
        "cas-register",
        0,
        "linearizable: 0 of 3 operations took effect; 1 pending",
        "PENDING",
    ),
    (
        "kv_pending.edn",
        "kv",
        0,
        "linearizable: 0 of 3 operations took effect; 2 pending, 1 failed",
        "PENDING",
    ),
    (
        "cas_info_only.edn",
        "cas-register",
        0,
        "linearizable: 0 of 3 operations took effect; 3 ended in info",
        "PENDING",
    ),
    ("cas_timeout_took_effect.edn", "cas-register", 0, "linearizable: 5 operations", "INFO"),
    ("cas_info_timeout.jsonl", "cas-register", 1, "not linearizable: 3 operations", "INFO"),
    ("cas_current_shape.edn", "cas-register", 0, "linearizable: 6 operations", "REGISTER"),
    ("nemesis_only.edn", "cas-register", 0, "linearizable: no client operation", "NOTHING"),
    ("nemesis_only.jsonl", "cas-register", 0, "linearizable: no client operation", "NOTHING"),
    ("empty.edn", "cas-register", 0, "linearizable: no client operation", "NOTHING"),
    ("empty.jsonl", "kv", 0, "linearizable: no client operation", "NOTHING"),
]


@pytest.mark.parametrize(("name", "model", "code", "summary", "source"), CORPUS, ids=[c[0] for c in CORPUS])
def test_the_corpus_gets_the_verdicts_jepsen_and_porcupine_give(name, model, code, summary, source):
    checked = history.check_file(JEPSEN / name, model, timeout=30)
    assert checked.exit_code == code and checked.verdict is not None
    assert checked.verdict.summary().startswith(summary), checked.verdict.summary()
    assert (checked.warning is not None) == (source == "NOTHING")
    if source == "NOTHING":
        with pytest.raises(history.HistoryError, match="--require-ops refuses a history that checks nothing"):
            history.check_file(JEPSEN / name, model, require_ops=True)


def test_the_corpus_is_the_files_on_disk():
    assert {c[0] for c in CORPUS if "/" not in c[0]} == {p.name for p in JEPSEN.iterdir()}
