"""Cancellation, the fault async code adds: a lock's operation cancelled at every await.

For each round trip of an uncontended `release()` and `acquire()`, and for each place a
cancellation can land there (before the command is sent; after it is sent, while the
reply is awaited), the operation's task is cancelled under the scheduler
(contend.schedule.async_gate). Then, as a running program would:

* the holder's event loop finishes what it still has to do (a shielded delete goes on
  after its caller is cancelled: real loops keep running);
* the holder, still alive, calls `release()` again (what a `finally` or a retry does;
  it may refuse: the lease may be gone already);
* another client must get the lock: at once after a cancelled release, and within a
  few TTLs after a cancelled acquire (a cancelled acquire whose SET went through is a
  lease nobody knows it holds, as after a crash).

A lease still held after that is one nobody can free but its TTL, or ever without one:
redis-py issue #3847 (the token cleared before the compare-and-delete was awaited).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

from contend.check.faults import FAULT_TTL, key_state
from contend.check.framework import Check, CheckContext, CheckFailed, CheckInconclusive
from contend.impl.catalog import CRASH_LIVENESS
from contend.schedule.async_gate import drain
from contend.schedule.client import OperationResult
from contend.schedule.gating import CancelAt
from contend.schedule.scheduler import Scheduler
from contend.subject.protocols import granted

#: Round trips an uncontended acquire or release may take before the check gives up counting.
MAX_ROUND_TRIPS = 20
WHERE = (CancelAt.BEFORE_SEND, CancelAt.AFTER_SEND)


def cancel_check(ctx: CheckContext) -> str:
    """Cancel release() and acquire() at every round trip, before and after the send; the lock
    must still be free for others (at once, or within a few TTLs after an acquire)."""
    ttl = ctx.ttl(FAULT_TTL)
    tried = 0
    counts = {}
    for operation in ("release", "acquire"):
        counts[operation] = round_trips(ctx, operation, ttl)
        for k in range(1, counts[operation] + 1):
            for where in WHERE:
                _scenario(ctx, operation, k, counts[operation], where, ttl)
                tried += 1
    return (
        f"{tried} cancellations (release: {counts['release']} round trip(s), acquire: {counts['acquire']}, "
        "each before the send and while the reply was awaited): the lock stayed free for others"
    )


def _scenario(ctx: CheckContext, operation: str, k: int, steps: int, where: CancelAt, ttl: int) -> None:
    key = ctx.namespace.key("cancel", operation, k, where.name.lower())
    with scheduled_clients(ctx, 2) as (s, conns):
        holder = ctx.factory(conns[0], key, ttl)
        other = ctx.factory(conns[1], key, ttl)
        if operation == "release" and not granted(
            run_to_end(s, 0, lambda: holder.acquire(blocking=False), "acquire()").value
        ):
            raise CheckFailed(f"an uncontended acquire of {key} was refused")
        label = f"{operation}()"
        s.start(0, lock_operation(holder, operation), label)
        for _ in range(k - 1):
            if s.idle(0):
                return  # fewer round trips this time: nothing to cancel at k
            s.step(0)
        if s.idle(0):
            return
        s.cancel(0, where)
        if not s.idle(0):  # the code caught the cancellation and carried on: let it finish
            finish(s, 0)
        run_to_end(s, 0, drain, "the loop finishes its background tasks")
        again = run_to_end(s, 0, lambda: holder.release(), "release() again")
        if again.error is not None:
            s.note(f"c0 release() again raised {type(again.error).__name__}: {again.error}")
        where_text = f"{label} cancelled {where.value}, at round trip {k} of {steps}"
        if operation == "release":
            got = run_to_end(s, 1, lambda: other.acquire(blocking=False), "another client's acquire()")
            if not granted(got.value):
                left = key_state(ctx.namespace.client, key)
                raise CheckFailed(
                    f"{where_text}; the holder's loop ran on and it called release() again, yet another "
                    f"client could not acquire: the lease is orphaned, held until its TTL runs out with "
                    f"nobody able to release it (left behind: {left}):\n{indent(s.format_trace())}"
                )
            return
        must_free_within(ctx, s, key, ttl, where_text)


def must_free_within(ctx: CheckContext, s: Scheduler, key: str, ttl: int, where_text: str) -> None:
    """crash liveness: after a cancelled acquire (or one that lost a reply, or a crash), another
    client gets the lock within a few TTLs. On servers that keep the scheduler's clock, that client
    is scheduled and the few TTLs pass in virtual time (to the millisecond, at no real cost); on one
    that keeps its own (--redis-url), it waits in real time."""
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
    for _ in range(max_steps):
        if s.idle(index) or index not in s.runnable():
            return
        s.step(index)
    raise CheckFailed(
        f"{s.clients[index].name} {s.clients[index].operation} did not end in {max_steps} steps"
    )


def indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


CANCEL = Check(
    "cancel",
    "a task cancelled at every round trip of release() and acquire(), before and after the send",
    cancel_check,
    CRASH_LIVENESS,
    needs=CRASH_LIVENESS,
)
