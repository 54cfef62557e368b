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

from contend.check.faults import FAULT_TTL, key_state
from contend.check.framework import Check, CheckContext, CheckFailed
from contend.check.scheduled import (
    finish,
    indent,
    lock_operation,
    must_free_within,
    round_trips,
    run_to_end,
    scheduled_clients,
)
from contend.impl.catalog import CRASH_LIVENESS
from contend.schedule.async_gate import drain
from contend.schedule.gating import CancelAt
from contend.subject.protocols import granted

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


CANCEL = Check(
    "cancel",
    "a task cancelled at every round trip of release() and acquire(), before and after the send",
    cancel_check,
    CRASH_LIVENESS,
    needs=CRASH_LIVENESS,
)
