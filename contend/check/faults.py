"""Fault tooling for the lock batteries: crashes at a chosen round trip (through the round-trip
tap, `contend.servers.tap`), extra clients, what a lock left behind.

Faults are real: time passes (short TTLs, real sleeps), a client "crashes"
by having its connection refuse the next round trip (`SimulatedCrash`), a
clock is skewed through the factory's `clock` argument.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import redis

from contend.check.framework import CheckContext, CheckInconclusive
from contend.impl.connection import glob_escape
from contend.servers.tap import RoundTrips, tap

T = TypeVar("T")

#: Lease lengths (ms). Short, so expiry is a real event that costs little time.
MODEL_TTL = 250
FAULT_TTL = 200
LONG_TTL = 5_000


def at_once(calls: dict[int, Callable[[], T]]) -> tuple[dict[int, T], dict[int, BaseException]]:
    """Run each call in a thread of its own, all at once (each a fault case on a key of its own,
    waiting in real time for leases to run out: together they take about as long as one), and
    wait for all: what each returned, and what each raised, by its number."""
    returned: dict[int, T] = {}
    raised: dict[int, BaseException] = {}

    def run(k: int, call: Callable[[], T]) -> None:
        try:
            returned[k] = call()
        except BaseException as exc:  # raised again in the check's own thread
            raised[k] = exc

    threads = [
        threading.Thread(target=run, args=(k, call), name=f"contend-fault-{k}", daemon=True)
        for k, call in calls.items()
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return returned, raised


def first_raised(raised: dict[int, BaseException]) -> None:
    """Raise what the lowest-numbered call raised, if any did."""
    if raised:
        raise raised[min(raised)]


def pause_all(taps: list[RoundTrips], seconds: float) -> None:
    """Every client pauses for `seconds`, as their processes would: no round trip goes out, their
    background threads' (a lease renewer's) included, until the pause ends."""
    for trips in taps:
        trips.pause_after(0)
    try:
        time.sleep(seconds)
    finally:
        for trips in taps:
            trips.resume()


def tapped_client(ctx: CheckContext, clients: list[redis.Redis]) -> tuple[redis.Redis, RoundTrips]:
    """A new connected client (added to `clients`) whose round trips from now on are counted."""
    client = ctx.target.client()
    clients.append(client)
    trips = tap(client)
    client.ping()  # connect (the handshake's round trips are not counted)
    trips.sent = 0
    return client, trips


@contextlib.contextmanager
def own_clients() -> Iterator[list[redis.Redis]]:
    """A list to put extra clients in; all closed at the end."""
    clients: list[redis.Redis] = []
    try:
        yield clients
    finally:
        for c in clients:
            with contextlib.suppress(Exception):
                c.close()


def key_state(client: redis.Redis, key: str) -> str:
    """What a lock left behind, for evidence: "<key> (no TTL), <key>:fence (pttl 120 ms)"."""
    parts = []
    for raw in sorted(client.scan_iter(match="*" + glob_escape(key) + "*", count=1000)):
        text = raw.decode(errors="replace")
        name = text.replace(key, "<key>", 1)
        pttl = client.pttl(raw)
        parts.append(f"{name} ({'no TTL' if pttl == -1 else f'pttl {pttl} ms'})")
    return ", ".join(parts) or "no keys"


class Inconclusive(Exception):
    """A lease may have run out on its own (the machine stalled): run the sequence again."""


def up_to_three_runs(ctx: CheckContext, sequence: Callable[[CheckContext, int, int], str]) -> str:
    """Run a model sequence again (on fresh keys) when a stall made its outcome inconclusive."""
    n = min(ctx.options.model_ops, 150)
    for attempt in range(3):
        try:
            return sequence(ctx, n, attempt)
        except Inconclusive:
            continue
    raise CheckInconclusive(
        f"{n} operations: three runs stalled past a lease's TTL; the machine is too loaded to tell"
    )
