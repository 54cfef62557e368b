"""The round-trip tap: it counts what reached a connected socket, and crashes on a budget."""

from __future__ import annotations

import socket

import pytest
import redis

from contend.impl.locks.token import TokenLock
from contend.servers.tap import RoundTrips, SimulatedCrash, round_trips, tap


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


def test_a_refused_connection_is_no_round_trip():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, not listening: connections are refused
        client = redis.Redis(port=port, socket_connect_timeout=1)
        trips = tap(client)
        with pytest.raises(redis.ConnectionError):
            client.ping()
    assert trips.sent == 0 and round_trips(client) == 0


def test_an_untapped_client_counts_nothing(client):
    client.ping()
    assert round_trips(client) == 0
