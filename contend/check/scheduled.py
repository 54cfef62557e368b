"""Async code under a check, on the scheduler: a check's redis.asyncio clients, each run one
round trip at a time by contend.schedule (the async gate), so a fault lands at a chosen round
trip: a task cancelled there (contend.check.cancel), its loop held there while its lease runs out
or its process dead there (contend.check.async_faults), the reply lost there
(contend.check.async_lost_reply). Here are the clients, the stepping, the count of an operation's
round trips, and the judgement those checks share: the lock is free again for others within a
few TTLs."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from contend.check.faults import key_state
from contend.check.framework import CheckContext, CheckFailed, CheckInconclusive
from contend.impl.catalog import CRASH_LIVENESS
from contend.schedule.client import OperationResult
from contend.schedule.scheduler import Scheduler
from contend.subject.protocols import granted

#: Round trips an uncontended acquire or release may take before the check gives up counting.
MAX_ROUND_TRIPS = 20


@contextlib.contextmanager
def scheduled_clients(ctx: CheckContext, n: int) -> Any:
    """A scheduler with `n` async clients, each a redis.asyncio client of its own (a cluster
    client on a Redis Cluster)."""
    ctx.check_abandoned()
    with Scheduler(clock=ctx.target.clock) as s:
        conns = [ctx.target.async_client() for _ in range(n)]
        for conn in conns:
            s.add_client(connection=conn)
        yield s, conns


def run_to_end(s: Scheduler, index: int, operation: Callable[[], Any], label: str = "") -> OperationResult:
    """Start `operation` on client `index` and step it alone to its end."""
    s.start(index, operation, label or getattr(operation, "__name__", "operation"))
    finish(s, index)
    return s.clients[index].outcome


def finish(s: Scheduler, index: int, max_steps: int = 500) -> None:
    """Step client `index` alone until its operation ends (CheckFailed after `max_steps`)."""
    for _ in range(max_steps):
        who = s.next_alone(index)
        if who is None:
            return
        s.step(who)
    raise CheckFailed(
        f"{s.clients[index].name} {s.clients[index].operation} did not end in {max_steps} steps"
    )


def indent(text: str) -> str:
    """`text` indented by four spaces: a trace in a check's evidence."""
    return "\n".join("    " + line for line in text.splitlines())


def round_trips(ctx: CheckContext, operation: str, ttl: int) -> int:
    """Round trips of an uncontended acquire or release, counted on a warmed-up lock (scripts loaded)."""
    counted = 0
    for i in range(2):
        counted = _count_once(ctx, ctx.namespace.key("cancel-count", operation, i), operation, ttl)
    return max(1, min(counted, MAX_ROUND_TRIPS))


def _count_once(ctx: CheckContext, key: str, operation: str, ttl: int) -> int:
    with scheduled_clients(ctx, 1) as (s, conns):
        lock = ctx.factory(conns[0], key, ttl)
        if operation == "release":
            run_to_end(s, 0, lambda: lock.acquire(blocking=False), "acquire()")
        before = len([t for t in s.trace if t.sent])
        run_to_end(s, 0, lock_operation(lock, operation), f"{operation}()")
        counted = len([t for t in s.trace if t.sent]) - before
        run_to_end(s, 0, lambda: lock.release(), "release()")
    return counted


def lock_operation(lock: Any, operation: str) -> Callable[[], Any]:
    """The operation under test: release(), or an acquire that does not wait."""
    if operation == "release":
        return lambda: lock.release()
    return lambda: lock.acquire(blocking=False)


def must_free_within(ctx: CheckContext, s: Scheduler, key: str, ttl: int, where_text: str) -> None:
    """crash liveness: after a cancelled acquire (or one that lost a reply, or a crash), another
    client gets the lock within a few TTLs. On servers that keep the scheduler's clock, that client
    is scheduled and the few TTLs pass in virtual time (to the millisecond, at no real cost); on one
    that keeps its own (--redis-url), it waits in real time. Judged only for a lock that claims
    crash liveness (as the synchronous lost-reply check does): one without a lease may stay held
    by a client that died."""
    if ctx.subject is not None and CRASH_LIVENESS not in ctx.subject.claims:
        return
    trace = s.format_trace()
    bound = ttl * 3 / 1000 + 0.5
    if s.clock is None:
        waited, got = _wait_in_real_time(ctx, key, ttl, bound)
        unit = "s"
    else:
        conn = ctx.target.async_client()
        index = s.add_client(connection=conn)
        lock = ctx.factory(conn, key, ttl)
        started = s.vclock
        s.start(index, lambda: lock.acquire(blocking=True, timeout=bound), "another client's acquire()")
        finish(s, index, max_steps=_PROBE_STEPS)
        if not s.idle(index):
            raise CheckInconclusive(
                f"{where_text}; another client's acquire(timeout={bound:g}) was still running after "
                f"{_PROBE_STEPS} round trips"
            )
        got = granted(s.clients[index].outcome.value)
        if got:
            with contextlib.suppress(Exception):
                run_to_end(s, index, lambda: lock.release(), "release()")
        waited, unit = s.vclock - started, "s of virtual time"
    if not got:
        raise CheckFailed(
            f"{where_text}; another client waited {waited:.1f} {unit} "
            f"({bound / (ttl / 1000):.1f} TTLs) in vain (left behind: {key_state(ctx.namespace.client, key)}):"
            f"\n{indent(trace)}",
            prop=CRASH_LIVENESS,
        )


#: Round trips a probe's blocking acquire may take while a lease runs out (a lock that polls every
#: millisecond for 3 TTLs of a second).
_PROBE_STEPS = 20_000


def _wait_in_real_time(ctx: CheckContext, key: str, ttl: int, bound: float) -> tuple[float, bool]:
    """Seconds another client waited for the lock on a server that keeps its own time, and whether
    it got it."""

    async def wait() -> bool:
        conn = ctx.target.async_client()
        try:
            lock = ctx.factory(conn, key, ttl)
            got = granted(await lock.acquire(blocking=True, timeout=bound))
            if got:
                with contextlib.suppress(Exception):
                    await lock.release()
            return got
        finally:
            await conn.aclose()

    start = time.monotonic()
    got = asyncio.run(wait())
    return time.monotonic() - start, got
