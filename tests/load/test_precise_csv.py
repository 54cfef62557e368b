"""contend.load.precise_csv against the installed Locust: the private method it replaces is there
with the parameters it was written for, and the CSV's percentiles keep their microseconds."""

from __future__ import annotations

import locust.stats
import pytest

from contend.load import precise_csv
from contend.load.metrics import bucket_ms


@pytest.fixture
def restored():
    original = getattr(locust.stats.StatsCSV, precise_csv.PATCHED)
    yield
    setattr(locust.stats.StatsCSV, precise_csv.PATCHED, original)


def test_the_installed_locust_has_the_method_it_replaces():
    assert precise_csv.applicable(), (
        f"locust {locust.__version__}: StatsCSV.{precise_csv.PATCHED} is not the one contend replaces; "
        "its CSV would round percentiles to whole ms"
    )


def test_percentiles_keep_three_decimals(restored, monkeypatch):
    monkeypatch.setattr(locust.stats, "bucket_response_time", bucket_ms)  # as the harness buckets
    entry = locust.stats.StatsEntry(locust.stats.RequestStats(), "ping", "redis")
    for ms in (0.05, 0.12, 0.123, 0.9):
        entry.log(ms, 0)
    writer = locust.stats.StatsCSV.__new__(locust.stats.StatsCSV)
    writer.percentiles_to_report = [0.5, 1.0]
    writer.percentiles_na = ["N/A", "N/A"]
    assert precise_csv.apply() and precise_csv.apply()  # once, and again: nothing more
    fields = writer._percentile_fields(entry)
    assert fields[0] == pytest.approx(0.12, abs=0.005) and fields[-1] == pytest.approx(0.9, abs=0.005)


def test_a_locust_without_it_is_left_alone(restored, monkeypatch):
    monkeypatch.delattr(locust.stats.StatsCSV, precise_csv.PATCHED)
    assert not precise_csv.applicable() and not precise_csv.apply()
    assert not hasattr(locust.stats.StatsCSV, precise_csv.PATCHED)
