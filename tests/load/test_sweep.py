"""The sweep plan: bad input refused."""

from __future__ import annotations

import pytest

from contend.load import workloads as wl
from contend.load.sweep import make_plan


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
