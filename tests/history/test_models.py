"""The models of whole histories: the lock run model leaves the counter to the invariants."""

from __future__ import annotations

import pytest

from contend.history.checker import NothingToCheck, check_calls
from contend.history.models import LockRunModel, history_check
from contend.history.verdict import Linearizability
from tests.history.helpers import by_time, history, hold


def test_lock_run_model_leaves_the_counter_to_the_invariants():
    calls = history(*by_time(hold(0, 0, 5, 7) + hold(1, 10, 15, 17)))
    verdict = check_calls(calls, LockRunModel(spontaneous_expiry=True))
    assert verdict.outcome is Linearizability.LINEARIZABLE and verdict.skipped == 2


def test_a_stress_run_still_refuses_a_history_in_which_nothing_took_effect():
    """`contend history check` passes it (as Jepsen does); a stress run, whose every operation
    failed, tested nothing: HistoryCheck.run refuses it unless told otherwise."""
    calls = history(
        (0, "invoke", "acquire", None, 0),
        (0, "fail", "acquire", None, 1),
        (1, "invoke", "acquire", None, 2),
    )
    check = history_check("mutex", calls)
    with pytest.raises(
        NothingToCheck, match=r"none of the 2 operation\(s\) took effect \(1 pending, 1 failed\)"
    ):
        check.run(calls)
    verdict, violations = check.run(calls, require_effect=False)
    assert verdict is not None and verdict.outcome is Linearizability.LINEARIZABLE and violations == []
    with pytest.raises(NothingToCheck, match="no client operation"):
        check.run([])


def test_the_verdict_names_the_model_as_the_user_spelled_it(capsys, tmp_path):
    """`--model mutex` searches the lease model first: the summary still says mutex."""
    from contend.cli import main

    history = tmp_path / "lock.jsonl"
    history.write_text(
        '{"process": 0, "type": "invoke", "f": "acquire", "value": null, "time": 0}\n'
        '{"process": 0, "type": "ok", "f": "acquire", "value": true, "time": 1}\n'
    )
    assert main(["history", "check", str(history), "--model", "mutex"]) == 0
    out = capsys.readouterr().out
    assert "model mutex" in out and "model lease" not in out
