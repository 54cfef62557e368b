"""The round-trip tap: it counts what reached a connected socket, and crashes on a budget; and the
watch on the servers of a run, which sends nothing to a server outside it."""

from __future__ import annotations

import asyncio
import socket
import threading

import pytest
import redis
import redis.asyncio

from contend.errors import ContendError
from contend.impl.locks.token import TokenLock
from contend.servers.server import EmbeddedRedis
from contend.servers.tap import (
    ForeignRoundTrip,
    ForeignServer,
    RoundTrips,
    ServerWatch,
    SimulatedCrash,
    foreign_round_trip,
    round_trips,
    tap,
    watch_servers,
    watching_servers,
)
from contend.servers.target import Target


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


@pytest.fixture(scope="module")
def side_server():
    with EmbeddedRedis() as server:
        yield server


def test_a_command_for_a_server_outside_the_run_is_not_sent_and_is_named(contend_target, side_server, ns):
    side = redis.Redis.from_url(side_server.url)
    own = contend_target.client()
    try:
        with watch_servers(ServerWatch.of(contend_target)) as watch:
            own.set(ns.key("mine"), 1)  # the run's server: as usual
            with pytest.raises(ForeignRoundTrip) as info:
                side.set("contend:side:key", 1)  # its connection says hello first: no data, let through
            raised: list[BaseException] = []  # and so is every one after, in any thread

            def get() -> None:
                try:
                    side.get("x")
                except BaseException as exc:
                    raised.append(exc)

            thread = threading.Thread(target=get)
            thread.start()
            thread.join()
            assert [type(e) for e in raised] == [ForeignRoundTrip]
            assert foreign_round_trip() is watch.first is not None
        assert foreign_round_trip() is None, "outside a watch, nothing is checked"
        assert side.dbsize() == 0, "nothing reached the other server"
        text = str(info.value)
        assert f"SET contend:side:key 1 to {info.value.server}" in text and "--masters" in text
        assert info.value.server == side_server.url.split("//")[1].rsplit("/", 1)[0]
    finally:
        side.close()
        own.close()


def test_the_servers_a_target_lists_and_async_clients_are_watched_alike(contend_target, side_server):
    with_side = Target(contend_target.url, "", also=(side_server.url,))

    async def side_get() -> object:
        conn = redis.asyncio.Redis.from_url(side_server.url)
        try:
            return await conn.get("contend:side:nothing")
        finally:
            await conn.aclose()

    with watch_servers(ServerWatch.of(with_side)):
        assert asyncio.run(side_get()) is None, "a server the target lists is part of the run"
    with watch_servers(ServerWatch.of(contend_target)), pytest.raises(ForeignRoundTrip):
        asyncio.run(side_get())


def test_a_watched_run_ends_with_an_error_naming_the_server(contend_target, side_server):
    @watching_servers
    def run(target: Target) -> str:
        try:
            redis.Redis.from_url(side_server.url).incr("contend:side:count")
        except Exception:  # code that swallows everything cannot swallow this
            return "swallowed"
        return "done"

    with pytest.raises(ForeignServer, match=r"INCRBY contend:side:count 1 to 127\.0\.0\.1:") as info:
        run(contend_target)
    assert isinstance(info.value, ContendError), "exit 2: contend could not judge the run"


def test_a_server_outside_the_run_that_cannot_be_reached_stops_the_run_too(contend_target):
    """redis-py connects before it packs a command: the connection failing is named instead of a
    ConnectionError the code under test would take for a verdict."""
    with watch_servers(ServerWatch.of(contend_target)), pytest.raises(ForeignRoundTrip) as info:
        redis.Redis(host="127.0.0.1", port=9, socket_connect_timeout=1).get("x")
    assert info.value.server == "127.0.0.1:9" and "it could not connect" in str(info.value)
