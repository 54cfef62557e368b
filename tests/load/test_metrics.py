"""Load figures without Locust: bucketing, percentiles, Jain's index, tallies that merge."""

from __future__ import annotations

import pytest

from contend.load.metrics import Distribution, OperationMetrics, Tally, bucket_ms, jain_index, percentile


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
    a.record(
        "1.1", OperationMetrics(keys=("k",), committed=True, retries=2, lock_wait=0.001, deltas={"k": 1})
    )
    b.record("2.1", OperationMetrics(keys=("k",), committed=True, deltas={"k": 1}))
    b.record("2.1", OperationMetrics(keys=("k",)), unknown=True)
    b.record("2.1", OperationMetrics(keys=("k",)), failed=True)
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


def test_a_tally_that_committed_nothing_or_mostly_failed_is_no_result():
    tally = Tally("counter", "watch")
    assert tally.progress_problems(0.5) == [
        "no operation committed (0 operation(s): 0 failed, 0 raised); a run that commits nothing measures nothing"
    ]
    committed = OperationMetrics(committed=True, deltas={"k": 1})
    for _ in range(4):
        tally.record("u1", committed)
    for _ in range(5):
        tally.record("u1", OperationMetrics(), failed=True)
    tally.record("u1", OperationMetrics(), unknown=True)
    tally.record("u1", OperationMetrics(), cut_short=True)  # the run's end, not the code's failure
    assert tally.failed_share == 0.6 and tally.cut_short == 1 and tally.unknown == 2
    (problem,) = tally.progress_problems(0.5)
    assert problem.startswith(
        "6 of 10 operations failed (60%, more than the 50% allowed by --max-failed-share"
    )
    assert tally.progress_problems(0.6) == []
    again = Tally.from_json(tally.to_json())
    assert (again.cut_short, again.failed_share) == (1, 0.6)


def test_a_commit_rate_gets_a_spread_from_its_full_windows():
    from contend.load.metrics import rate_spread

    steady = {10: 3, 11: 100, 12: 100, 13: 100, 14: 100, 15: 40}  # first and last windows are partial
    assert rate_spread(steady) == (0.0, 4)
    spread, n = rate_spread({10: 3, 11: 80, 12: 120, 13: 100, 14: 5})
    # mean 100, sd 20 over 3 windows: t(2) 4.30 × 20 / √3 / 100
    assert n == 3 and spread == pytest.approx(4.30 * 20 / 3**0.5 / 100)
    assert rate_spread({10: 3, 11: 100, 12: 100, 13: 5}) is None  # two full windows tell nothing
    assert rate_spread({10: 3, 14: 5}) is None  # full windows without a commit: no rate to spread


def test_windows_merge_across_processes_and_survive_json():
    a, b = Tally("registry", "watch"), Tally("registry", "watch")
    a.windows, b.windows = {1: 5, 2: 7}, {2: 1, 3: 4}
    a.merge(b)
    assert a.windows == {1: 5, 2: 8, 3: 4}
    assert Tally.from_json(a.to_json()).windows == a.windows
