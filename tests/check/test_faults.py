"""Fault tooling of the lock batteries: the round-trip tap counts and crashes on budget."""

from __future__ import annotations

import pytest

from contend.check.faults import RoundTrips, SimulatedCrash, tap
from contend.impl.locks.token import TokenLock


def test_tap_counts_round_trips_and_crashes_on_budget(contend_target, client, ns):
    tapped = contend_target.client()
    try:
        trips: RoundTrips = tap(tapped)
        tapped.ping()
        trips.sent = 0
        lock = TokenLock(tapped, ns.key("lock"), 1_000)
        lock.acquire(blocking=False)
        assert trips.sent == 1
        trips.crash_after(0)
        with pytest.raises(SimulatedCrash):
            lock.release()
    finally:
        tapped.close()
    assert client.exists(ns.key("lock")) == 1, "the crashed release never reached the server"
