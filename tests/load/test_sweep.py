"""The sweep plan: bad input refused."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from contend.errors import ContendError
from contend.load import workload
from contend.load.sweep import locust_command, make_plan
from contend.load.workload import LoadInputError


def test_sweep_plans_refuse_bad_input():
    plan = make_plan()
    assert list(plan.workloads) == ["registry"] and plan.users == (1, 4, 16, 64)
    assert len(plan.points()) == 36 and plan.estimate_seconds() < 150
    full = make_plan(full=True)
    assert set(full.workloads) == {"registry", "counter", "transfer", "jobs"}
    picked = make_plan(workloads=["transfer", "counter"], strategies=["watch", "fine_locks"])
    assert picked.workloads == {"transfer": ["watch", "fine_locks"], "counter": ["watch"]}
    with pytest.raises(LoadInputError, match="unknown to every chosen workload"):
        make_plan(strategies=["watch", "nope"])
    with pytest.raises(LoadInputError, match="none of --strategy"):
        make_plan(workloads=["registry"], strategies=["fine_locks"])
    with pytest.raises(LoadInputError, match="--hot-keys must be a whole number > 0"):
        make_plan(hot_keys=[0])
    with pytest.raises(LoadInputError, match="no workload called"):
        make_plan(workloads=["nope"])


LOCK = "tests.fixtures.foreign.redispy_lock:make"


def test_a_user_implementation_is_the_one_strategy_of_the_workloads_of_its_kind(tmp_path):
    plan = make_plan(impl=LOCK, kind="lock", users=[2], hot_keys=[1], processes=1)
    assert plan.workloads == {"counter": [LOCK], "transfer": [LOCK]}
    assert (plan.impl, plan.kind) == (LOCK, "lock")
    point = plan.points()[0]
    assert plan.strategy_kind(point) == workload.LOCK
    assert point.slug == "counter/tests.fixtures.foreign.redispy_lock_make/u2-h1"
    cmd = locust_command(point, plan, "redis://x", "ns", tmp_path, tmp_path)
    assert cmd[cmd.index("--impl") + 1] == LOCK and cmd[cmd.index("--kind") + 1] == "lock"
    assert "--strategy" not in cmd
    only = make_plan(impl=LOCK, kind="lock", workloads=["transfer"])
    assert only.workloads == {"transfer": [LOCK]}
    registry = make_plan(impl="tests.fixtures.user_registry:make", kind="registry")
    with pytest.raises(ContendError, match="needs --kind: the protocol it follows"):
        make_plan(impl="tests.fixtures.user_registry:make")  # never a silent default
    assert registry.workloads == {"registry": ["tests.fixtures.user_registry:make"]}
    assert registry.strategy_kind(registry.points()[0]) == workload.USER


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"impl": LOCK, "kind": "lock", "strategies": ["watch"]}, "choose one"),
        ({"impl": LOCK, "kind": "lock", "workloads": ["registry"]}, "it runs in the counter and transfer"),
        ({"impl": LOCK, "kind": "semaphore"}, "not a semaphore"),
        ({"kind": "lock"}, "--kind lock names the protocol of --impl"),
        ({"impl": "nope:make", "kind": "lock"}, "cannot import 'nope'"),
    ],
)
def test_a_user_implementation_that_cannot_run_is_refused(kwargs, message):
    with pytest.raises(ContendError, match=message):
        make_plan(**kwargs)


def test_a_broken_point_is_explained_by_its_check_not_the_log_tail(tmp_path):
    from contend.load.sweep import broken_because

    point = {"summary": "p.json", "log": "p.log"}
    (tmp_path / "p.log").write_text("Locust error table\n| 1 | RuntimeError |\n")
    assert broken_because(tmp_path, point) == "Locust error table | | 1 | RuntimeError |"
    (tmp_path / "p.json").write_text(
        json.dumps({"workloads": {"counter": {"ok": False, "verdict": ["ham:0 is 3 but 4 succeeded"]}}})
    )
    assert broken_because(tmp_path, point) == "ham:0 is 3 but 4 succeeded"


def test_several_process_counts_run_every_point_at_each():
    from contend.load.sweep import default_processes

    assert make_plan().processes == (default_processes(),)
    assert make_plan().points()[0].slug == "registry/watch/u1-h1", "one count: the names of old"
    plan = make_plan(
        workloads=["counter"], strategies=["incr"], users=[4], hot_keys=[1], processes=[4, 1, 2, 2]
    )
    assert plan.processes == (1, 2, 4)
    assert [(p.processes, p.slug) for p in plan.points()] == [
        (1, "counter/incr/u4-h1-p1"),
        (2, "counter/incr/u4-h1-p2"),
        (4, "counter/incr/u4-h1-p4"),
    ]
    assert plan.ceilings() == 6 and "4 Locust processes" in plan.points()[2].describe()
    commands = [locust_command(p, plan, "redis://x", "ns", Path("raw"), Path("lt")) for p in plan.points()]
    assert "--processes" not in commands[0]
    assert [c[c.index("--processes") + 1] for c in commands[1:]] == ["2", "4"]
    assert plan.points()[1].record() == {
        "workload": "counter", "strategy": "incr", "users": 4, "hot_keys": 1, "processes": 2,
    }  # fmt: skip


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "got nothing"),
        (" , ", "got nothing"),
        ("0", "--processes must be a whole number > 0, got 0"),
        ("1,-2", "--processes must be a whole number > 0, got -2"),
        ("1.5", "got '1.5'"),
        ("1,,2", "got '1,,2'"),
        ("two", "got 'two'"),
    ],
)
def test_process_counts_are_whole_numbers_above_zero(text, message):
    from contend.load.sweep import parse_counts

    with pytest.raises(LoadInputError, match=re.escape(message)):
        parse_counts(text, "--processes")
    assert parse_counts(" 1, 2,4 ", "--processes") == [1, 2, 4]
