"""The adapters' unit conversions: exact, or refused."""

from __future__ import annotations

import pytest

from contend.adapters.units import check_lease, seconds_truncated_to, whole_seconds


@pytest.mark.parametrize("ttl_ms", [1, 7, 100, 1001, 1003, 2049, 10_000, 123_457])
def test_truncating_libraries_get_exactly_the_milliseconds_asked_for(ttl_ms):
    assert int(seconds_truncated_to(ttl_ms) * 1000) == ttl_ms


def test_whole_second_libraries_refuse_a_fraction():
    assert whole_seconds(3000) == 3
    with pytest.raises(ValueError, match="whole seconds; 1500 ms"):
        whole_seconds(1500)


@pytest.mark.parametrize(
    ("key", "ttl"), [("", 1000), (None, 1000), ("k", 0), ("k", -5), ("k", 1.5), ("k", True)]
)
def test_bad_leases_are_refused(key, ttl):
    with pytest.raises(ValueError):
        check_lease(key, ttl)
