"""The load workloads without Locust: every correct strategy keeps its invariant, broken runs are caught."""

from __future__ import annotations

import pytest

import contend.impl.registry.lock_first
from contend.load import workloads as wl
from contend.load.instrument import counting_client
from contend.load.metrics import OperationMetrics, Tally


@pytest.mark.parametrize("name", ["registry", "counter", "transfer"])
def test_every_correct_strategy_keeps_the_invariant_when_run_serially(
    contend_target, client, ns, name, monkeypatch
):
    # registry/lock_first swaps in a timed TokenLock; keep that swap to this test.
    monkeypatch.setattr(
        contend.impl.registry.lock_first, "TokenLock", contend.impl.registry.lock_first.TokenLock
    )
    w = wl.workload(name)
    url = contend_target.url
    for strategy in w.strategies():
        prefix = ns.key(name, strategy)
        w.setup(client, prefix, 2)
        tally = Tally(name, strategy)
        user = counting_client(url)
        try:
            op = w.operation(user, prefix, strategy, 2, 5000, "u1")
            for _ in range(20):
                step = OperationMetrics()
                op(step)
                tally.record("u1", step)
        finally:
            user.close()
        verdict = w.check(client, prefix, 2, tally)
        assert verdict.ok, (strategy, verdict.lines)
        assert tally.commits == 20


def test_checks_catch_a_lost_update_and_a_leak(client, ns):
    counter = wl.workload("counter")
    prefix = ns.key("counter")
    client.set(f"{prefix}:ham:0", 7)
    tally = Tally("counter", "watch")
    for _ in range(9):
        tally.record(
            "u", OperationMetrics(keys=(f"{prefix}:ham:0",), committed=True, deltas={f"{prefix}:ham:0": 1})
        )
    verdict = counter.check(client, prefix, 1, tally)
    assert not verdict.ok and "2 lost updates" in verdict.lines[0]

    transfer = wl.workload("transfer")
    prefix = ns.key("transfer")
    transfer.setup(client, prefix, 1)
    client.incrby(f"{prefix}:acct:0", 5)
    verdict = transfer.check(client, prefix, 1, Tally("transfer", "watch"))
    assert not verdict.ok and "+5" in verdict.lines[0]


def test_unknown_outcomes_widen_what_the_check_accepts(client, ns):
    counter = wl.workload("counter")
    prefix = ns.key("counter")
    key = f"{prefix}:ham:0"
    client.set(key, 3)
    tally = Tally("counter", "watch")
    for _ in range(2):
        tally.record("u", OperationMetrics(keys=(key,), committed=True, deltas={key: 1}))
    tally.record("u", OperationMetrics(keys=(key,)), unknown=True)
    assert counter.check(client, prefix, 1, tally).ok  # 2 certain + 1 that took effect


def test_known_bad_strategies_only_on_request(monkeypatch):
    counter = wl.workload("counter")
    monkeypatch.delenv(wl.KNOWN_BAD_ENV, raising=False)
    assert "naive" not in counter.strategies()
    assert "lock_exists_then_set" not in counter.strategies()
    assert {"watch", "lock_first", "lock_fenced", "incr", "lua"} <= set(counter.strategies())
    with pytest.raises(wl.LoadInputError, match="no strategy 'naive'"):
        counter.strategy("naive")
    monkeypatch.setenv(wl.KNOWN_BAD_ENV, "1")
    assert counter.strategies()["naive"].known_bad
    assert set(wl.workload("registry").strategies()) == {"watch", "lock_first", "lua"}
