"""contend.load.summary: the --contend-json record, written once and read back whole."""

from __future__ import annotations

import json

from contend.load.summary import LocustFigures, RunSummary, WorkloadSummary, read_summary


def test_a_summary_reads_back_as_it_was_written(tmp_path):
    workload = WorkloadSummary(
        ok=True,
        invariant_ok=True,
        verdict=("1 counter(s) hold 10 in total = 10 successful increments",),
        locust=LocustFigures(requests=20, requests_per_s=100.0, start_time=10.0, last_request_time=12.0),
        contend={"requests": 20, "commits": 10},
    )
    summary = RunSummary(strategy="watch", hot_keys=1, ok=True, workloads={"counter": workload})
    path = tmp_path / "deep" / "summary.json"
    summary.write(path)
    assert read_summary(path) == summary
    assert json.loads(path.read_text())["workloads"]["counter"]["locust"]["requests_per_s"] == 100.0
    assert workload.committed_per_s == 50.0 and workload.locust.window == (10.0, 12.0)


def test_a_partial_or_missing_summary_reads_as_absent_figures(tmp_path):
    path = tmp_path / "old.json"
    path.write_text(json.dumps({"workloads": {"counter": {"ok": False, "verdict": ["broken"], "extra": 1}}}))
    summary = read_summary(path)
    assert summary is not None and not summary.ok
    (old,) = summary.workloads.values()
    assert (
        old.verdict == ("broken",) and not old.invariant_ok
    )  # before progress checks: ok was the invariant's
    assert old.committed_per_s is None and old.locust.window is None
    assert read_summary(tmp_path / "none.json") is None
    (tmp_path / "cut.json").write_text('{"workloads": ')
    assert read_summary(tmp_path / "cut.json") is None
