"""contend.load without Locust: bucketing, tallies, the workloads' invariant checks, the sweep plan."""

from __future__ import annotations

import contend.impl.registry.lock_first
import pytest

from contend.load import workloads as wl
from contend.load.ceiling import parse_benchmark_csv
from contend.load.instrument import counting_client, round_trips
from contend.load.metrics import Distribution, Step, Tally, bucket_ms, jain_index, percentile
from contend.load.sweep import make_plan


def test_bucketing_keeps_microseconds():
    assert bucket_ms(0.123456) == 0.123
    assert bucket_ms(0.0004) == 0.0  # below a microsecond
    assert bucket_ms(0.0016) == 0.002
    assert bucket_ms(1.23456) == 1.23
    assert bucket_ms(147.3) == 147
    assert bucket_ms(3432) == 3430
    assert bucket_ms(0) == 0.0


def test_percentile_and_jain():
    hist = {0.1: 50, 0.2: 49, 9.0: 1}
    assert percentile(hist, 0.5) == 0.1
    assert percentile(hist, 0.99) == 0.2
    assert percentile(hist, 1.0) == 9.0
    assert percentile({}, 0.5) == 0.0
    assert jain_index([5, 5, 5, 5]) == pytest.approx(1.0)
    assert jain_index([10, 0, 0, 0]) == pytest.approx(0.25)
    assert jain_index([]) is None


def test_tallies_merge_and_round_trip_through_json():
    a, b = Tally("counter", "watch"), Tally("counter", "watch")
    a.user("1.1")
    b.user("2.1")
    a.record("1.1", Step(keys=("k",), committed=True, retries=2, lock_wait=0.001, deltas={"k": 1}))
    b.record("2.1", Step(keys=("k",), committed=True, deltas={"k": 1}))
    b.record("2.1", Step(keys=("k",)), unknown=True)
    b.record("2.1", Step(keys=("k",)), failed=True)
    merged = Tally.from_json(a.to_json())
    merged.merge(Tally.from_json(b.to_json()))
    assert (merged.commits, merged.unknown, merged.failed, merged.retries) == (2, 1, 1, 2)
    assert merged.key_counts("k") == (2, 1)
    assert merged.processes == 2
    summary = merged.summary()
    assert summary["users"] == 2 and summary["jain_index"] == pytest.approx(1.0)
    assert summary["retries_per_commit"] == 1.0
    assert summary["lock_wait_mean_ms"] == pytest.approx(1.0)


def test_distribution_percentiles_in_ms():
    d = Distribution()
    for seconds in (0.0001, 0.0002, 0.0003, 0.05):
        d.add(seconds)
    assert d.count == 4 and d.max == 0.05
    assert d.percentile_ms(0.5) == 0.2
    assert Distribution.from_json(d.to_json()) == d


def test_counting_client_counts_round_trips(contend_target, ns):
    counted = counting_client(contend_target.url)
    try:
        counted.ping()  # connecting sends a few commands of its own
        before = round_trips(counted)
        counted.ping()
        with counted.pipeline() as pipe:
            pipe.set(ns.key("a"), 1).incr(ns.key("a")).get(ns.key("a"))
            pipe.execute()
        assert round_trips(counted) - before == 2  # a MULTI/EXEC block is one round trip
    finally:
        counted.close()


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
                step = Step()
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
        tally.record("u", Step(keys=(f"{prefix}:ham:0",), committed=True, deltas={f"{prefix}:ham:0": 1}))
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
        tally.record("u", Step(keys=(key,), committed=True, deltas={key: 1}))
    tally.record("u", Step(keys=(key,)), unknown=True)
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


def test_sweep_plans_refuse_bad_input():
    plan = make_plan()
    assert list(plan.workloads) == ["registry"] and plan.users == (1, 4, 16, 64)
    assert len(plan.points()) == 36 and plan.estimate_seconds() < 150
    full = make_plan(full=True)
    assert set(full.workloads) == {"registry", "counter", "transfer"}
    picked = make_plan(workloads=["transfer", "counter"], strategies=["watch", "fine_locks"])
    assert picked.workloads == {"transfer": ["watch", "fine_locks"], "counter": ["watch"]}
    with pytest.raises(wl.LoadInputError, match="unknown to every chosen workload"):
        make_plan(strategies=["watch", "nope"])
    with pytest.raises(wl.LoadInputError, match="none of --strategy"):
        make_plan(workloads=["registry"], strategies=["fine_locks"])
    with pytest.raises(wl.LoadInputError, match="--hot-keys must be a whole number > 0"):
        make_plan(hot_keys=[0])
    with pytest.raises(wl.LoadInputError, match="no workload called"):
        make_plan(workloads=["nope"])


def test_redis_benchmark_csv_is_parsed():
    old = '"PING_INLINE","98039.22"\n"PING_BULK","99009.90"\n'
    new = '"test","rps","avg_latency_ms"\n"PING_INLINE","81967.21","0.330"\n"PING_MBULK","86956.52","0.311"\n'
    assert parse_benchmark_csv(old) == 99009.90
    assert parse_benchmark_csv(new) == 86956.52
    assert parse_benchmark_csv("garbage") is None
