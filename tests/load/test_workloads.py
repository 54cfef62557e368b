"""The load workloads without Locust: every correct strategy keeps its invariant, broken runs are caught."""

from __future__ import annotations

import pytest

import contend.impl.registry.lock_first
import contend.impl.transactions.lock_first
from contend.errors import ContendError
from contend.load import workload
from contend.load import workloads as wl
from contend.load.instrument import counting_client
from contend.load.metrics import OperationMetrics, Tally
from contend.load.workload import (
    KNOWN_BAD_ENV,
    LoadInputError,
    LoadWorkload,
    user_code,
    user_strategy,
    user_workloads,
)
from contend.subject.subject import Subject


@pytest.mark.parametrize("name", ["registry", "counter", "transfer", "limiter"])
def test_every_correct_strategy_keeps_the_invariant_when_run_serially(
    contend_target, client, ns, name, monkeypatch
):
    # registry/lock_first and transfer/lock_first swap in a timed TokenLock; keep that swap to this test.
    monkeypatch.setattr(
        contend.impl.registry.lock_first, "TokenLock", contend.impl.registry.lock_first.TokenLock
    )
    monkeypatch.setattr(
        contend.impl.transactions.lock_first, "TokenLock", contend.impl.transactions.lock_first.TokenLock
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
    client.incrby(transfer.keys(prefix, 1)[0], 5)
    verdict = transfer.check(client, prefix, 1, Tally("transfer", "watch"))
    assert not verdict.ok and "+5" in verdict.lines[0]
    # A known-bad bank's broken sum comes with the anomaly contend check names for it.
    verdict = transfer.check(client, prefix, 1, Tally("transfer", "transfer_no_watch"))
    assert verdict.lines[-1].startswith(
        "contend check --only transfer_no_watch names the anomaly: lost update"
    )


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
    monkeypatch.delenv(KNOWN_BAD_ENV, raising=False)
    assert "naive" not in counter.strategies()
    assert "lock_exists_then_set" not in counter.strategies()
    assert {"watch", "lock_first", "lock_fenced", "incr", "lua"} <= set(counter.strategies())
    with pytest.raises(LoadInputError, match="no strategy 'naive'"):
        counter.strategy("naive")
    monkeypatch.setenv(KNOWN_BAD_ENV, "1")
    assert counter.strategies()["naive"].known_bad
    assert set(wl.workload("registry").strategies()) == {"watch", "lock_first", "lua"}


LOCK = "tests.fixtures.foreign.redispy_lock:make"
REGISTRY = "tests.fixtures.user_registry:make"
LIMITER = "tests.fixtures.foreign.list_log:make"


def run_serially(w: LoadWorkload, url: str, prefix: str, impl: Subject, ops: int = 20) -> Tally:
    tally = Tally(w.name, impl.name)
    user = counting_client(url)
    try:
        op = w.operation(user, prefix, impl.name, 2, 5000, "u1", impl=impl, shared={})
        for _ in range(ops):
            step = OperationMetrics()
            op(step)
            tally.record("u1", step)
    finally:
        user.close()
    return tally


@pytest.mark.parametrize(
    ("spec", "kind"), [(LOCK, "lock"), (REGISTRY, "registry"), (LIMITER, "rate_limiter")]
)
def test_a_user_implementation_is_a_strategy_of_the_workloads_of_its_kind(
    contend_target, client, ns, spec, kind
):
    impl = user_code(spec, kind)
    strategy = user_strategy(impl.name, impl.family)
    assert strategy.name == spec and strategy.kind == (workload.LOCK if kind == "lock" else workload.USER)
    for name in user_workloads(impl):
        w = wl.workload(name)
        prefix = ns.key(name)
        w.setup(client, prefix, 2)
        tally = run_serially(w, contend_target.url, prefix, impl)
        verdict = w.check(client, prefix, 2, tally, impl=impl)
        assert verdict.ok, (name, verdict.lines)
        assert tally.commits == 20
        if kind == "lock":
            assert tally.lock_wait.count == 20, "the user's lock is timed like the catalog's"


def test_a_user_registry_is_judged_through_its_own_count_reverse_and_lookup(contend_target, client, ns):
    impl = user_code("tests.fixtures.user_registry:make_racy", "registry")
    registry = wl.workload("registry")
    prefix = ns.key("registry")
    tally = run_serially(registry, contend_target.url, prefix, impl, ops=10)
    assert registry.check(client, prefix, 2, tally, impl=impl).ok  # serially even the racy one is right
    # What a lost race leaves behind: an id handed out (INCR) and never stored.
    space = registry.user_namespaces(prefix, 2)[0]
    reg = impl.factory(client, space)
    client.incr(reg.keys.counter)
    reg.register("late")
    verdict = registry.check(client, prefix, 2, tally, impl=impl)
    assert not verdict.ok
    assert any("registry r0: count() is" in line and "not gap-free" in line for line in verdict.lines)
    assert any("new names were registered" in line for line in verdict.lines), verdict.lines


def test_the_limiter_check_counts_admitted_hits_against_the_limit_over_the_run(client, ns):
    from contend.load.limiter import LIMIT
    from contend.load.metrics import WINDOW

    limiter = wl.workload("limiter")
    prefix = ns.key("limiter")
    (key,) = limiter.keys(prefix, 1)
    tally = Tally("limiter", "fixed_window")
    tally.commits = 3 * LIMIT + 50
    tally.windows = {0: 1, int(1 / WINDOW) - 1: 1}  # decisions over one second: one window
    tally.per_key = {key: [2 * LIMIT, 0]}  # the most two windows can hold (the run meets two)
    verdict = limiter.check(client, prefix, 1, tally)
    assert verdict.ok and "admitted 2.00-2.00 × the limit a window" in verdict.lines[0], verdict.lines
    assert "150 refused" in verdict.lines[0]
    tally.per_key = {key: [2 * LIMIT + 1, 0]}
    verdict = limiter.check(client, prefix, 1, tally)
    assert not verdict.ok and f"admitted {2 * LIMIT + 1} in 1.0 s" in verdict.lines[0], verdict.lines


def test_a_user_lock_is_refused_by_the_registry_workload():
    impl = user_code(LOCK, "lock")
    with pytest.raises(LoadInputError, match="runs in the counter and transfer workloads, not in registry"):
        wl.workload("registry").accept(impl)


@pytest.mark.parametrize(
    ("spec", "kind", "message"),
    [
        (LOCK, "semaphore", "contend load runs your lock .*, not a semaphore; check it with"),
        (LOCK, "single-flight", "not a single-flight"),
        (LOCK, "transaction", "not a transaction; check it with"),
        (LOCK, "leaderboard", "unknown --kind 'leaderboard'"),
        ("nope", "lock", "expected package.module:factory"),
        ("nope.mod:make", "lock", "cannot import 'nope.mod'"),
        (LOCK, "registry", "a registry factory is called as factory"),
        ("tests.fixtures.user_registry:NOT_CALLABLE", "registry", "not a callable factory"),
    ],
)
def test_a_user_implementation_that_cannot_run_is_bad_input(spec, kind, message):
    with pytest.raises(ContendError, match=message):
        user_code(spec, kind)
