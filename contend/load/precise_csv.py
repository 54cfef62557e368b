"""Locust's CSV percentiles to the microsecond.

contend's round trips take tens of microseconds, and Locust's CSV writer (`StatsCSV`) cuts every
percentile to whole milliseconds. Locust has a public hook for bucketing response times (used in
contend.load.harness) but none for how the CSV prints percentiles, so `apply()` replaces the
private `StatsCSV._percentile_fields` with one that keeps three decimals. It is applied when a
Locust run that loads contend's harness starts (`events.init`), not when the module is imported,
and refuses a Locust whose method is not the one this was written for; tests/load/test_precise_csv.py
checks it against the installed Locust (the bounds allow 2.x).
"""

from __future__ import annotations

import inspect
from typing import Any

import locust.stats

#: What is replaced, and the parameters it must have (Locust 2.x).
PATCHED = "_percentile_fields"
PARAMETERS = ("self", "stats_entry", "use_current")


def _precise_percentile_fields(self: Any, stats_entry: Any, use_current: bool = False) -> list[Any]:
    if not stats_entry.num_requests:
        return list(self.percentiles_na)
    if use_current and stats_entry.use_response_times_cache:
        get = stats_entry.get_current_response_time_percentile
    else:
        get = stats_entry.get_response_time_percentile
    return [round(get(p) or 0, 3) for p in self.percentiles_to_report]


def applicable() -> bool:
    """Does the installed Locust's StatsCSV have the method, with the parameters, replaced here?"""
    original = getattr(locust.stats.StatsCSV, PATCHED, None)
    if original is None:
        return False
    return tuple(inspect.signature(original).parameters) == PARAMETERS


def apply() -> bool:
    """Keep three decimals in the CSV's percentiles (once); False, and nothing changed, when the
    installed Locust's writer is not the one this was written for (its whole ms are kept)."""
    current = getattr(locust.stats.StatsCSV, PATCHED, None)
    if current is _precise_percentile_fields:
        return True
    if not applicable():
        return False
    setattr(locust.stats.StatsCSV, PATCHED, _precise_percentile_fields)
    return True
