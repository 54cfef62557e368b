"""The models of whole histories: the lock run model leaves the counter to the invariants."""

from __future__ import annotations

from contend.history.checker import check_calls
from contend.history.models import LockRunModel
from contend.history.verdict import Linearizability
from tests.history.helpers import by_time, history, hold


def test_lock_run_model_leaves_the_counter_to_the_invariants():
    calls = history(*by_time(hold(0, 0, 5, 7) + hold(1, 10, 15, 17)))
    verdict = check_calls(calls, LockRunModel(spontaneous_expiry=True))
    assert verdict.outcome is Linearizability.LINEARIZABLE and verdict.skipped == 2
