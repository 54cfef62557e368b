"""The one round-trip tap: count what a client sends, and make it crash on a budget.

A round trip is one packed send on a connection: a single command, a pipeline
or a MULTI/EXEC block. `tap(client)` swaps the connection class of the
client's pool, so every connection it makes from then on is counted. A send
counts only once the connection is up: a connection refused before anything
was sent is no round trip (a stress worker then knows its operation cannot
have taken effect). `crash_after(n)` lets n more round trips through and then
raises `SimulatedCrash` on every one after: the client died there.
`pause_after(n)` lets n more round trips through and then holds the next one
until `resume()`: the client stalls between two round trips of an operation.
`lose_after(n, error)` lets n more round trips through and then loses the reply of the
next one: the server runs it (every reply is read), the connection drops and `error`
(what redis-py raises then: a ConnectionError or TimeoutError) comes out of the read.
A later round trip that sends the same commands again counts as a resend (`resent`).
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any

import redis

from contend.servers.cluster_client import pools_of
from contend.servers.payload import decode_packed


class SimulatedCrash(BaseException):
    """The client died here. A BaseException, so no lock code catches it and carries on."""


class RoundTrips:
    """A client's round trips so far (`sent`), and the crash budget, if any."""

    def __init__(self) -> None:
        self.sent = 0
        self.budget: int | None = None
        self.pause_at: int | None = None
        self.paused = threading.Event()  # set while round trips are held by pause_after
        #: Lose the reply of round trip number `lose_at` (1-based), raising `lose_with` instead.
        self.lose_at: int | None = None
        self.lose_with: Exception | None = None
        self.lost: list[list[Any]] = []  # [server, commands] of each round trip whose reply was lost
        self.resent = 0  # round trips that sent again what a lost one had sent
        self._resume = threading.Event()
        self._lock = threading.Lock()

    def spend(self) -> None:
        """One round trip is about to go out; SimulatedCrash when the budget is spent."""
        if self.pause_at is not None and self.sent >= self.pause_at:
            self.paused.set()  # every round trip from now on waits (a paused process sends nothing)
            self._resume.wait(30)
        if self.budget is None:
            self.sent += 1
            return
        with self._lock:
            if self.budget is not None:
                if self.budget <= 0:
                    raise SimulatedCrash(f"simulated crash before round trip {self.sent + 1}")
                self.budget -= 1
            self.sent += 1

    def crash_after(self, round_trips: int) -> None:
        """Let `round_trips` more round trips through, then crash on every one after."""
        with self._lock:
            self.budget = round_trips

    def pause_after(self, round_trips: int) -> None:
        """Let `round_trips` more round trips through, then hold every one after until `resume()`
        (`paused` is set once one waits; they go on by themselves after 30 s). The client's
        background threads (a lease renewer) are held too: the whole process is paused."""
        self._resume.clear()
        self.pause_at = self.sent + round_trips

    def lose_after(self, round_trips: int, error: Exception) -> None:
        """Let `round_trips` more round trips through, then lose the next one's reply (`error`)."""
        self.lose_at = self.sent + round_trips + 1
        self.lose_with = error

    def resume(self) -> None:
        self.pause_at = None
        self.paused.clear()
        self._resume.set()


def tap(client: redis.Redis, trips: RoundTrips | None = None) -> RoundTrips:
    """Count (and make crashable) every round trip of `client`'s future connections; with
    `trips`, on that counter (one counter over several clients: Redlock's masters).

    A cluster client's nodes each have a pool; a node it meets later (a replica promoted, a
    slot moved to a node it had not used) gets a tapped pool too."""
    trips = trips or RoundTrips()
    tapped: dict[type, type] = {}

    def tapped_class(base: Any) -> type:
        if base not in tapped:

            def send_packed_command(self: Any, command: Any, check_health: bool = True) -> None:
                self.connect()  # a refused connection raises here, before anything is counted as sent
                trips.spend()
                commands = decode_packed(command) if trips.lost or trips.lose_at else []
                where = f"{getattr(self, 'host', '')}:{getattr(self, 'port', '')}"
                if trips.lost and [where, commands] == trips.lost[-1]:
                    trips.resent += 1  # the same commands to the same server again
                base.send_packed_command(self, command, check_health)
                if trips.lose_at is not None and trips.sent == trips.lose_at:
                    trips.lose_at = None
                    trips.lost.append([where, commands])
                    self._contend_lose = (trips.lose_with, len(commands))

            def read_response(self: Any, *args: Any, **kwargs: Any) -> Any:
                lose = getattr(self, "_contend_lose", None)
                if lose is None:
                    return base.read_response(self, *args, **kwargs)
                self._contend_lose = None
                error, replies = lose
                for _ in range(max(1, replies)):  # the server has run every command of it
                    with contextlib.suppress(redis.ResponseError):
                        base.read_response(self, *args, **kwargs)
                self.disconnect()
                raise error

            tapped[base] = type(
                f"Tapped{base.__name__}",
                (base,),
                {"send_packed_command": send_packed_command, "read_response": read_response},
            )
        return tapped[base]

    for pool in pools_of(client):  # a cluster client has one per node
        pool.connection_class = tapped_class(pool.connection_class)
        pool.contend_round_trips = trips
    nodes = getattr(client, "nodes_manager", None)
    if nodes is not None:
        kwargs = nodes.connection_kwargs
        kwargs["connection_class"] = tapped_class(kwargs.get("connection_class", redis.Connection))
    return trips


def round_trips(client: redis.Redis) -> int:
    """Round trips a tapped `client` has sent so far (0 for one that is not tapped)."""
    pools = pools_of(client)
    trips = getattr(pools[0], "contend_round_trips", None) if pools else None
    return trips.sent if trips is not None else 0
