"""Stalls and crashes for async locks, on the scheduler: the holder's task is held at a round
trip (its whole loop stands still, as a paused process's would) while its lease runs out, or
it dies there; the others act around it.

Why apart from the synchronous expiry and crash checks (contend.check.locks), which judge the
same: those inject their faults in real time through the round-trip tap (contend.servers.tap),
which wraps redis-py's synchronous connection and holds a stalled holder's thread on an event.
A redis.asyncio client's round trips are awaited on its loop, which the tap does not wrap and
where a blocking hold would stop every task: here the scheduler's async gate holds the holder's
loop at a round trip (contend.check.scheduled), and on servers that keep the scheduler's clock
the lease runs out in virtual time.

* expiry (safe release): the holder stalls before each round trip of its release until its
  lease has expired and another client holds the lock; then the late release goes on, and
  a third client must still be kept out.
* crash (crash liveness): the holder dies after each round trip of its acquire; another
  client must get the lock within a few TTLs.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

from contend.check.faults import FAULT_TTL, key_state
from contend.check.framework import Check, CheckContext, CheckFailed
from contend.check.lock_faults import expiry_verdict
from contend.check.scheduled import (
    finish,
    indent,
    lock_operation,
    must_free_within,
    round_trips,
    run_to_end,
    scheduled_clients,
)
from contend.impl.catalog import CRASH_LIVENESS, PROGRESS, SAFE_RELEASE
from contend.subject.protocols import granted

#: The successor's lease (ms): it does not run out during the check.
LONG_TTL = 10_000


def _outside(ctx: CheckContext, key: str, ttl: int, **kwargs: Any) -> bool:
    """A client outside the schedule (real time, its own loop) tries to acquire: granted?"""

    async def run() -> bool:
        conn = ctx.target.async_client()
        try:
            lock = ctx.factory(conn, key, ttl)
            return granted(await lock.acquire(**kwargs))
        finally:
            await conn.aclose()

    return asyncio.run(run())


def expiry_check(ctx: CheckContext) -> str:
    """The holder stalls past its lease before each round trip of its release, another client
    takes the lock, then the late release goes on: a third client must still be kept out."""
    ttl = ctx.ttl(FAULT_TTL)
    steps = round_trips(ctx, "release", ttl)
    return expiry_verdict(ctx, steps, {k - 1: _expiry_round(ctx, k, steps, ttl) for k in range(1, steps + 1)})


def _expiry_round(ctx: CheckContext, k: int, steps: int, ttl: int) -> str:
    """A stall before round trip `k` of the release: "" when the successor was left alone, or
    why there was no successor to harm (its lease never expired): nothing judged there."""
    key = ctx.namespace.key("async-expiry", k)
    where = f"before round trip {k} of its {steps}-round-trip release"
    with scheduled_clients(ctx, 2) as (s, conns):
        holder = ctx.factory(conns[0], key, ttl)
        successor = ctx.factory(conns[1], key, LONG_TTL)
        if not granted(run_to_end(s, 0, lambda: holder.acquire(blocking=False), "acquire()").value):
            raise CheckFailed(f"an uncontended acquire of {key} was refused", prop=PROGRESS)
        s.start(0, lock_operation(holder, "release"), "release()")
        for _ in range(k - 1):
            if s.idle(0):
                return ""  # fewer round trips this time
            s.step(0)
        if s.idle(0):
            return ""
        s.note(f"c0 stalls {where} until its {ttl} ms lease has run out")
        if s.clock is not None:
            s.advance(ttl / 1000 + 0.001)  # the server keeps the virtual clock: the lease is gone
        else:
            time.sleep(ttl / 1000 + 0.05)  # a server that keeps its own time: wait for it
        wait = ttl * 3 / 1000
        took = run_to_end(s, 1, lambda: successor.acquire(blocking=True, timeout=wait), "acquire()")
        if not granted(took.value):
            return f"the lease never expired ({key_state(ctx.namespace.client, key)})"
        finish(s, 0)  # the late release goes on; whatever it returns or raises is allowed
        if _outside(ctx, key, LONG_TTL, blocking=False):
            raise CheckFailed(
                f"the holder stalled {where} until its lease expired; its late release freed the "
                f"successor's lease: a third client acquired while c1 held the lock:\n{indent(s.format_trace())}",
                prop=SAFE_RELEASE,
            )
        with contextlib.suppress(Exception):
            run_to_end(s, 1, lambda: successor.release(), "release()")
    return ""


def crash_check(ctx: CheckContext) -> str:
    """The holder's process dies after each round trip of its acquire (held at a round trip, then
    crashed: it sends nothing more, its connection closes): others get the lock within a few TTLs."""
    ttl = ctx.ttl(FAULT_TTL)
    steps = round_trips(ctx, "acquire", ttl)
    for k in range(1, steps + 1):  # after each round trip; after the last one it holds the lock
        _crash_round(ctx, k, steps, ttl)
    return f"crashed after each of {steps} acquire round trip(s), and holding it: others acquired within a few TTLs"


def _crash_round(ctx: CheckContext, k: int, steps: int, ttl: int) -> None:
    """The holder dies after round trip `k` of its acquire (holding the lock, after the last)."""
    key = ctx.namespace.key("async-crash", k)
    with scheduled_clients(ctx, 1) as (s, conns):
        holder = ctx.factory(conns[0], key, ttl)
        s.start(0, lambda: holder.acquire(blocking=False), "acquire()")
        for _ in range(k):
            if s.idle(0):
                break
            s.step(0)
        if s.idle(0):
            when = "holding the lock (acquire done)"
        else:
            when = f"after round trip {k} of its {steps}-round-trip acquire"
            s.crash(0)
        must_free_within(ctx, s, key, ttl, f"the holder crashed {when}")


ASYNC_EXPIRY = Check(
    "expiry",
    "a release stalled past expiry (the holder's loop held at a round trip) leaves the successor alone",
    expiry_check,
    SAFE_RELEASE,
    needs=SAFE_RELEASE,
)
ASYNC_CRASH = Check(
    "crash",
    "the holder's task dies at every round trip of its acquire; others get in",
    crash_check,
    CRASH_LIVENESS,
    needs=CRASH_LIVENESS,
)
