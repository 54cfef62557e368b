"""Tallies in worker reports, without Locust: the latest snapshot per worker counts, once."""

from __future__ import annotations

from contend.load.metrics import OperationMetrics, Tally
from contend.load.tallies import Collector, Snapshot


def snapshot(run: str, commits: int, *, final: bool, user: str = "u1") -> dict:
    tally = Tally("counter", "watch")
    for _ in range(commits):
        tally.record(user, OperationMetrics(keys=("k",), committed=True, deltas={"k": 1}))
    return Snapshot(run, final, {"counter": tally}, cpu_s=0.5, wall_s=1.0).to_json()


def test_repeated_and_late_reports_change_nothing():
    collector = Collector()
    collector.begin("run1", ["w1", "w2"])
    collector.receive("w1", snapshot("run1", 3, final=False))
    collector.receive("w1", snapshot("run1", 5, final=True))
    collector.receive("w1", snapshot("run1", 5, final=True))  # a repeat of the final report
    collector.receive("w1", snapshot("run1", 4, final=False))  # a periodic report that arrived late
    collector.receive("w2", snapshot("run1", 7, final=True, user="u2"))
    collector.receive("w2", snapshot("old-run", 100, final=True))  # another run's report
    collector.receive("w2", None)  # a report without a tally
    assert collector.pending(["w1", "w2"]) == set()
    merged = collector.merged(["counter"], "watch", 60)
    assert merged.problems == []
    tally = merged.tallies["counter"]
    assert (tally.commits, tally.processes, tally.per_user) == (12, 2, {"u1": 5, "u2": 7})
    assert [g["commits"] for g in merged.generators] == [{"counter": 5}, {"counter": 7}]
    assert merged.generator_cpu == 0.5
    # Merging again gives the same figures: the kept snapshots are not altered by a merge.
    assert collector.merged(["counter"], "watch", 60).tallies["counter"].commits == 12


def test_a_worker_without_a_final_tally_is_counted_as_missing():
    collector = Collector()
    collector.begin("run1", ["w1", "w2", "w3"])
    collector.receive("w1", snapshot("run1", 5, final=True))
    collector.receive("w2", snapshot("run1", 2, final=False))  # lost before it stopped
    collector.receive("w4", snapshot("run1", 1, final=False))  # joined later: it takes part too
    assert collector.pending(["w1", "w2", "w4", "w5"]) == {"w2", "w4"}
    merged = collector.merged(["counter"], "watch", 60)
    assert merged.problems == [
        "no final tally from 3 of 4 load-generating process(es) (lost, or not within 60 s); "
        "their operations are not counted"
    ]
    assert merged.tallies["counter"].commits == 5


def test_no_report_at_all_is_a_problem():
    collector = Collector()
    collector.begin("run1")
    merged = collector.merged(["counter"], "watch", 60)
    assert merged.problems == ["no load-generating process reported a tally"]
    assert merged.tallies == {} and merged.generator_cpu is None
