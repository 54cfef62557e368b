"""The linearizability search: its verdicts and evidence on Porcupine's, Knossos' and generated histories."""

from __future__ import annotations

from pathlib import Path

import pytest

from contend.benchmarks.checker import cas_register_history, corrupt, kv_history, registry_history
from contend.history.checker import check_calls, check_history
from contend.history.formats import read_history
from contend.history.invariants import registry_ids
from contend.history.records import Record, pair
from contend.history.verdict import Linearizability
from contend.models.base import UNKNOWN, Op
from contend.models.cas_register import CasRegisterModel
from contend.models.kv import KvModel
from contend.models.registry_by_name import RegistryByNameModel

DATA = Path(__file__).resolve().parents[1] / "data"


def ops(*spec, model=None):
    """Records from (process, f, value, output, start, end) tuples; end None means info, output "fail" fail."""
    records = []
    for process, f, value, output, start, end in spec:
        records.append(Record(process, "invoke", f, None, value, start))
        if end is not None:
            kind = "fail" if output == "fail" else "ok"
            records.append(Record(process, kind, f, None, value if f != "read" else output, end))
        elif output == "info":
            records.append(Record(process, "info", f, None, None, 10**9))
    records.sort(key=lambda r: r.time)
    return [
        Record(r.process, r.type, r.f, r.key, r.value, r.time, i, line=i + 1) for i, r in enumerate(records)
    ]


def verdict(records, model=None, timeout=5.0):
    return check_history(records, model or CasRegisterModel(initial=0), timeout=timeout)


# --------------------------------------------------------------------------- classic examples


def test_porcupine_register_examples():
    # 6.824 2017 quiz 2, section VII, as in Porcupine's TestRegisterModel.
    good = ops((0, "write", 100, None, 0, 100), (1, "read", None, 100, 25, 75), (2, "read", None, 0, 30, 60))
    assert verdict(good).outcome is Linearizability.LINEARIZABLE
    bad = ops((0, "write", 200, None, 0, 100), (1, "read", None, 200, 10, 30), (2, "read", None, 0, 40, 90))
    v = verdict(bad)
    assert v.outcome is Linearizability.NOT_LINEARIZABLE
    assert v.culprit is not None and v.culprit.process == 2


def test_porcupine_zero_duration():
    good = ops(
        (0, "write", 100, None, 0, 100),
        (1, "read", None, 100, 25, 75),
        (2, "read", None, 0, 30, 30),
        (3, "read", None, 0, 30, 30),
    )
    assert verdict(good).outcome is Linearizability.LINEARIZABLE
    bad = ops(
        (0, "write", 200, None, 0, 100),
        (1, "read", None, 200, 10, 10),
        (2, "read", None, 200, 10, 10),
        (3, "read", None, 0, 40, 90),
    )
    assert verdict(bad).outcome is Linearizability.NOT_LINEARIZABLE


def test_knossos_style_register_histories():
    # A read of a value nobody wrote.
    assert verdict(ops((0, "read", None, 7, 0, 1))).outcome is Linearizability.NOT_LINEARIZABLE
    # A stale read after a write completed.
    stale = ops((0, "write", 1, None, 0, 10), (1, "read", None, 0, 20, 30))
    assert verdict(stale).outcome is Linearizability.NOT_LINEARIZABLE
    # Reads concurrent with a write may see old then new ...
    fine = ops((0, "write", 1, None, 0, 50), (1, "read", None, 0, 10, 20), (2, "read", None, 1, 30, 40))
    assert verdict(fine).outcome is Linearizability.LINEARIZABLE
    # ... but not new then old (the new-old inversion).
    inverted = ops((0, "write", 1, None, 0, 50), (1, "read", None, 1, 10, 20), (2, "read", None, 0, 30, 40))
    assert verdict(inverted).outcome is Linearizability.NOT_LINEARIZABLE
    # cas: two concurrent successful cas from the same value cannot both succeed.
    double = ops((0, "cas", [0, 1], True, 0, 10), (1, "cas", [0, 2], True, 1, 11))
    assert verdict(double).outcome is Linearizability.NOT_LINEARIZABLE
    # A failed cas took no effect; an ok one did.
    seq = ops(
        (0, "cas", [5, 1], "fail", 0, 10), (1, "cas", [0, 2], True, 20, 30), (0, "read", None, 2, 40, 50)
    )
    assert verdict(seq).outcome is Linearizability.LINEARIZABLE


def test_info_operations_may_take_effect():
    # The timed-out write must be considered effective: the later read sees it.
    seen = ops((0, "write", 5, "info", 0, None), (1, "read", None, 5, 100, 110))
    assert verdict(seen).outcome is Linearizability.LINEARIZABLE
    # ... or never: a read after it may still see the old value.
    unseen = ops((0, "write", 5, "info", 0, None), (1, "read", None, 0, 100, 110))
    assert verdict(unseen).outcome is Linearizability.LINEARIZABLE
    # ... but not before it was invoked.
    early = ops((1, "read", None, 5, 0, 10), (0, "write", 5, "info", 20, None))
    assert verdict(early).outcome is Linearizability.NOT_LINEARIZABLE
    # ... and once: after a read saw it and a write replaced it, it cannot reappear.
    once = ops(
        (0, "write", 5, "info", 0, None),
        (1, "read", None, 5, 10, 20),
        (1, "write", 6, None, 30, 40),
        (1, "read", None, 5, 50, 60),
    )
    assert verdict(once).outcome is Linearizability.NOT_LINEARIZABLE
    # A timed-out cas that must have happened between two reads.
    cas = ops(
        (0, "write", 1, None, 0, 10),
        (1, "cas", [1, 2], "info", 20, None),
        (2, "read", None, 1, 30, 40),
        (2, "read", None, 2, 50, 60),
    )
    assert verdict(cas).outcome is Linearizability.LINEARIZABLE


def test_failed_operations_take_no_effect():
    failed = ops((0, "write", 5, "fail", 0, 10), (1, "read", None, 5, 20, 30))
    assert verdict(failed).outcome is Linearizability.NOT_LINEARIZABLE


def test_jepsen_etcd_logs():
    bad = check_history(read_history(DATA / "etcd_000.log"), CasRegisterModel(), timeout=10)
    assert bad.outcome is Linearizability.NOT_LINEARIZABLE
    culprit = bad.culprit
    assert culprit is not None and culprit.invoke.line == 85 and culprit.f == "read" and culprit.output == 2
    (part,) = bad.partitions
    assert len(part.linearization) == len(part.states) > 20
    assert part.culprit_op == Op("read", None, 2, None, 11)
    good = check_history(read_history(DATA / "etcd_002.log"), CasRegisterModel(), timeout=10)
    assert good.outcome is Linearizability.LINEARIZABLE


def test_partitions_by_key_report_the_bad_one():
    v = check_history(read_history(DATA / "cas_independent.edn"), CasRegisterModel(), timeout=5)
    assert v.outcome is Linearizability.NOT_LINEARIZABLE and v.checked == 2
    (part,) = v.partitions
    assert part.key == 2
    assert part.culprit is not None and part.culprit.invoke.line == 17
    assert [r.f for r in v.nemesis] == ["start", "start"]
    doc = v.to_json()
    assert doc["culprit"]["line"] == 17 and doc["partitions"][0]["key"] == 2
    assert doc["partitions"][0]["longest_prefix"][-1]["state_after"] == "7"


def test_kv_histories():
    assert check_history(read_history(DATA / "kv_ok.edn"), KvModel()).outcome is Linearizability.LINEARIZABLE
    bad = check_history(read_history(DATA / "kv_bad.edn"), KvModel())
    assert bad.outcome is Linearizability.NOT_LINEARIZABLE
    assert [p.key for p in bad.partitions] == ["x"]


def test_budget_spent_gives_unknown():
    # n concurrent writes and a read of a value never written: refuting it visits every
    # subset of the writes, 2**n configurations.
    def history(n):
        spec = [(k, "write", k, None, k, 1000 + k) for k in range(n)]
        spec.append((n, "read", None, 999, n, 2000))
        return ops(*spec)

    small = verdict(history(6), timeout=10)
    assert small.outcome is Linearizability.NOT_LINEARIZABLE
    big = verdict(history(22), timeout=0.2)
    assert big.outcome is Linearizability.UNKNOWN
    assert big.partitions[0].seconds < 10  # stopped by its 0.2 s budget: the whole search takes minutes
    assert "budget" in big.partitions[0].explain()


def test_not_linearizable_wins_over_unknown():
    # The hard partition: 26 concurrent writes and a read of a value never written, 2**26
    # configurations to refute, far more than any machine searches in the 2 s budget below.
    spec = [(k, "write", k, None, k, 1000 + k) for k in range(26)]
    spec.append((26, "read", None, 999, 26, 2000))
    records = ops(*spec)
    records = [Record(r.process, r.type, r.f, "hard", r.value, r.time, r.index, line=r.line) for r in records]
    records += [
        Record(100, "invoke", "read", "easy", None, 5000, len(records)),
        Record(100, "ok", "read", "easy", 3, 5001, len(records) + 1),
    ]
    # The searches take turns: the easy partition is proven not linearizable while the hard
    # one is still open, and that settles the verdict without searching the hard one further.
    v = check_history(records, CasRegisterModel(initial=0), timeout=60)
    assert v.outcome is Linearizability.NOT_LINEARIZABLE
    assert [p.key for p in v.partitions] == ["easy"] and v.unsearched == 1 and v.decided == 1
    assert "1 not searched (--all searches every one)" in v.summary()
    # --all searches every partition, within the one budget: the hard one is left open. (The easy
    # one takes milliseconds; a 0.2 s budget was spent before its turn on a busy machine.)
    v = check_history(records, CasRegisterModel(initial=0), timeout=2, all_partitions=True)
    assert v.outcome is Linearizability.NOT_LINEARIZABLE and v.unsearched == 0
    assert {p.outcome for p in v.partitions} == {Linearizability.NOT_LINEARIZABLE, Linearizability.UNKNOWN}
    assert v.open == 1 and "1 partition(s) still open when the 2 s budget ran out" in v.summary()


def test_unknown_operation_is_bad_input():
    from contend.history.records import HistoryError

    records = [
        Record(0, "invoke", "frobnicate", None, 1, 0, 0, line=1),
        Record(0, "ok", "frobnicate", None, 1, 1, 1),
    ]
    with pytest.raises(HistoryError, match="line 1: frobnicate"):
        check_history(records, CasRegisterModel())


def test_registry_by_name():
    model = RegistryByNameModel()
    good = pair(read_history(DATA / "registry.jsonl"))
    v = check_calls(good.calls, model)
    assert v.outcome is Linearizability.NOT_LINEARIZABLE
    assert v.culprit is not None and v.culprit.invoke.line == 7

    def reg(*spec):
        records = []
        for k, (p, f, name, out, start, end) in enumerate(spec):
            records.append(Record(p, "invoke", f, None, name, start, 2 * k))
            records.append(Record(p, "info" if out is UNKNOWN else "ok", f, None, out, end, 2 * k + 1))
        return sorted(records, key=lambda r: r.time or 0)

    # A lookup racing the register may miss it; after the register completed it may not.
    racing = reg((0, "register", "a", 1, 0, 10), (1, "lookup", "a", None, 5, 8))
    assert check_history(racing, model).outcome is Linearizability.LINEARIZABLE
    late = reg((0, "register", "a", 1, 0, 10), (1, "lookup", "a", None, 20, 30))
    assert check_history(late, model).outcome is Linearizability.NOT_LINEARIZABLE
    # A register whose reply was lost may still have assigned an id, seen later.
    lost = reg(
        (0, "register", "a", UNKNOWN, 0, 10**6),
        (1, "lookup", "a", 4, 20, 30),
        (1, "register", "a", 4, 40, 50),
    )
    assert check_history(lost, model).outcome is Linearizability.LINEARIZABLE
    unstable = reg((0, "register", "a", 1, 0, 10), (1, "register", "a", 2, 20, 30))
    assert check_history(unstable, model).outcome is Linearizability.NOT_LINEARIZABLE


# --------------------------------------------------------------------------- generated histories


def test_generated_histories():
    model = CasRegisterModel()
    cas = cas_register_history(processes=5, operations=400, seed=3, info_rate=0.05)
    assert check_history(cas, model, timeout=10).outcome is Linearizability.LINEARIZABLE
    bad = corrupt(cas, "read", lambda r: 99)
    assert check_history(bad, model, timeout=10).outcome is Linearizability.NOT_LINEARIZABLE
    kv = kv_history(operations=600, keys=3)
    assert check_history(kv, KvModel(), timeout=10).outcome is Linearizability.LINEARIZABLE
    reg = registry_history(operations=3000, names=300, info_rate=0.02)
    v = check_history(reg, RegistryByNameModel(), timeout=10)
    assert v.outcome is Linearizability.LINEARIZABLE and v.checked > 100
    assert registry_ids(pair(reg).calls) == []


def test_a_history_in_which_nothing_took_effect_is_linearizable():
    """Knossos drops failed operations and leaves out those that may never have happened; so does
    the search, and with nothing left the history is linearizable (no partition searched)."""
    failed_and_pending = ops((0, "write", 5, "fail", 0, 10), (1, "cas", [0, 1], "info", 20, None))
    v = verdict(failed_and_pending)
    assert v.outcome is Linearizability.LINEARIZABLE and v.checked == 0 and v.took_effect == 0
    assert (
        v.summary()
        == "linearizable: 0 of 2 operations took effect; 1 ended in info, 1 failed; model cas-register"
    )
    assert v.to_json()["outcomes"] == {"ok": 0, "failed": 1, "info": 1, "pending": 0}
    nothing = check_history([], CasRegisterModel())
    assert nothing.outcome is Linearizability.LINEARIZABLE and nothing.summary().startswith(
        "linearizable: no client operation, nothing was checked"
    )


def test_operations_that_took_effect_but_none_the_model_searches_decide_nothing():
    from contend.history.checker import NothingToCheck
    from contend.history.models import LockRunModel

    records = [Record(0, "invoke", "incr", "c", None, 0, 0), Record(0, "ok", "incr", "c", 1, 1, 1)]
    with pytest.raises(NothingToCheck, match="none of the 1 operation"):
        check_history(records, LockRunModel())
