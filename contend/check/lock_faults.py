"""The lock battery's faults on a holder, in real time through the round-trip tap
(contend.servers.tap): a holder stalled past its lease before each round trip of its release
(expiry) or of its extend (stale-extend), and one that dies after each round trip of its acquire
or while queued (crash). Whatever the late release or extend returns or raises is allowed: each
is judged by its effect on the other clients. Async code meets the same faults on the scheduler
(contend.check.async_faults): the tap wraps redis-py's synchronous connection only.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable
from typing import Any

import redis

from contend.check.faults import (
    FAULT_TTL,
    LONG_TTL,
    at_once,
    first_raised,
    key_state,
    own_clients,
    tapped_client,
)
from contend.check.framework import CheckContext, CheckFailed, expect
from contend.impl.catalog import CRASH_LIVENESS, MUTUAL_EXCLUSION, PROGRESS, SAFE_RELEASE
from contend.servers.tap import SimulatedCrash
from contend.subject.protocols import granted

# --- a lease that expires under its holder ----------------------------------------------------------


#: A successor's lease in the stale-extend check (ms), and the slack for its end.
SUCCESSOR_TTL = 400
SLACK_MS = 250


def _round_trips_of(ctx: CheckContext, extra: list[redis.Redis], what: str) -> int:
    """How many round trips one release (or extend) of a held lease makes (scripts warmed up)."""
    client, trips = tapped_client(ctx, extra)
    counted = 0
    for i in range(2):  # the first time may load scripts
        lock = ctx.factory(client, ctx.namespace.key("count", what, i), ctx.ttl(LONG_TTL))
        with expect(f"an uncontended acquire before counting the {what}'s round trips", prop=PROGRESS):
            if not granted(lock.acquire(blocking=False)):
                raise CheckFailed("a free lock could not be acquired", prop=PROGRESS)
        trips.sent = 0
        with contextlib.suppress(Exception):
            lock.release() if what == "release" else lock.extend(ctx.ttl(LONG_TTL))
        counted = trips.sent
        with contextlib.suppress(Exception):
            lock.release()
    return max(1, counted)


def _stalled_holder(ctx: CheckContext, extra: list[redis.Redis], key: str, after: int, what: str) -> Any:
    """A holder, in a thread of its own, that acquires and then starts its release (or extend),
    held after `after` of its round trips; returns (thread, its round-trip tap)."""
    client, trips = tapped_client(ctx, extra)
    lock = ctx.factory(client, key, ctx.ttl(FAULT_TTL))
    acquired = threading.Event()
    got: list[bool] = []

    def life() -> None:
        try:
            got.append(granted(lock.acquire(blocking=False)))
        except Exception:
            got.append(False)
        trips.pause_after(after)
        acquired.set()
        if got[0]:
            with contextlib.suppress(Exception):
                lock.release() if what == "release" else lock.extend(ctx.ttl(LONG_TTL))

    thread = threading.Thread(target=life, name=f"contend-stalled-{what}", daemon=True)
    thread.start()
    if not acquired.wait(10) or not got[0]:
        raise CheckFailed("A could not acquire a free lock", prop=PROGRESS)
    deadline = time.monotonic() + 10
    while not trips.paused.is_set() and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.001)
    return thread, trips


def where_stalled(k: int, steps: int, what: str) -> str:
    """Where the holder stalls: before its release (extend), or after round trip k of it."""
    return f"before its {what}" if k == 0 else f"after round trip {k} of its {steps}-round-trip {what}"


def judged_positions(
    ctx: CheckContext, steps: int, what: str, returned: dict[int, str], situation: str, done: str
) -> str:
    """The pass of a check that stalled a holder at each of `steps` positions of its `what`:
    `returned` holds what each position returned, "" or why no successor got the lock there
    (nothing to harm). None judged: the property was not exercised (ctx.not_exercised says which,
    and in what situation); some: the pass names those that were not."""
    unjudged = {k: why for k, why in returned.items() if why}
    if not unjudged:
        return done
    why = "; ".join(
        f"stalled {where_stalled(k, steps, what)}: {text}" for k, text in sorted(unjudged.items())
    )
    if len(unjudged) == steps:
        ctx.not_exercised[SAFE_RELEASE] = situation
        return f"not exercised: no successor took the lock at any of the {steps} stall position(s) ({why})"
    return (
        f"{done} where a successor took the lock ({steps - len(unjudged)} of {steps} position(s); none "
        f"did when {why})"
    )


def expiry_check(ctx: CheckContext) -> str:
    """A holder stalls past its TTL before each round trip of its release (each position on a key
    of its own, all at once), and another client takes the lock meanwhile: the late
    release must leave that lease alone (a third client still cannot get in). Whatever the late
    release returns or raises is allowed."""
    with own_clients() as extra:
        steps = _round_trips_of(ctx, extra, "release")
        returned, raised = at_once(
            {k: functools.partial(_expiry_position, ctx, extra, k, steps) for k in range(steps)}
        )
    first_raised(raised)
    return expiry_verdict(ctx, steps, returned)


def expiry_verdict(ctx: CheckContext, steps: int, returned: dict[int, str]) -> str:
    """The pass of an expiry check (this one, and async code's) from what each stall position of
    the release returned."""
    return judged_positions(
        ctx,
        steps,
        "release",
        returned,
        LATE_RELEASE,
        f"a holder stalled before each of the {steps} round trip(s) of its release left its successor alone",
    )


def _expiry_position(ctx: CheckContext, extra: list[redis.Redis], k: int, steps: int) -> str:
    """The holder stalls at position `k` of its release: "" when the successor was left alone, or
    why there was no successor to harm."""
    where = where_stalled(k, steps, "release")
    ctx.note(f"expiry: the holder stalls {where}")
    key = ctx.namespace.key("expiry", k)
    b, c, d, e = (
        ctx.factory(ctx.client(), key, ctx.ttl(LONG_TTL)) for _ in range(4)
    )  # long: no stall ends them
    thread, trips = _stalled_holder(ctx, extra, key, k, "release")
    time.sleep(ctx.ttl(FAULT_TTL) / 1000 + 0.05)  # A's lease runs out while it is stalled
    try:
        with expect("B acquires after A's lease expired", prop=PROGRESS):
            took = granted(b.acquire(blocking=True, timeout=ctx.ttl(FAULT_TTL) * 3 / 1000))
        # The premise: B's hold keeps others out before A's late release does anything.
        # If it does not, what C would show below is not A's doing.
        with expect("E tries while B holds the lock and A is still stalled", prop=MUTUAL_EXCLUSION):
            if took and granted(e.acquire(blocking=False)):
                raise CheckFailed(
                    "B acquired, then E acquired too while B held the lock (before A's late "
                    f"release ran; {key_state(ctx.namespace.client, key)})",
                    prop=MUTUAL_EXCLUSION,
                )
    finally:
        trips.resume()
        thread.join(10)
    if not took:
        # No successor, so no successor's lease to free: nothing to judge here. A lease that
        # never ends is a liveness failure, the crash check's business.
        return (
            f"the lease never expired (B waited {ctx.ttl(FAULT_TTL) * 3} ms in vain; "
            f"{key_state(ctx.namespace.client, key)})"
        )
    with expect("C tries while B holds the lock", prop=MUTUAL_EXCLUSION):
        if granted(c.acquire(blocking=False)):
            raise CheckFailed(
                f"A stalled {where} until its lease expired; its late release freed B's lease: "
                "C acquired while B held the lock"
            )
    with contextlib.suppress(Exception):
        b.release()  # judged by its effect: D must get in
    with expect("D acquires after B released", prop=PROGRESS):
        if not granted(d.acquire(blocking=False)):
            raise CheckFailed("after B released, D could not acquire", prop=PROGRESS)
    with contextlib.suppress(Exception):
        d.release()
    return ""


#: The situations the expiry and stale-extend checks judge safe release in.
LATE_RELEASE = "a successor holding the lock while a holder's release, stalled past its lease, went on"
_LATE_EXTEND = "a successor holding the lock while a holder's extend, stalled past its lease, went on"


def stale_extend_check(ctx: CheckContext) -> str:
    """A holder stalls past its TTL before each round trip of its extend (each position on a key
    of its own, all at once), and another client takes the lock with a short lease
    meanwhile: the late extend must not prolong it (a third client gets in once that lease has
    run out). Beside them, a control: a lease of the same length, not extended, must run out by
    itself, or what a late extend does cannot be told apart."""
    with own_clients() as extra:
        steps = _round_trips_of(ctx, extra, "extend")
        calls: dict[int, Callable[[], str]] = {
            k: functools.partial(_stale_extend_position, ctx, extra, k, steps) for k in range(steps)
        }
        calls[-1] = functools.partial(_lease_runs_out, ctx)  # the control
        returned, raised = at_once(calls)
    if -1 in raised:
        raise raised[-1]
    if renewed := returned.pop(-1):  # then a late extend's failure would mean nothing
        ctx.not_exercised[SAFE_RELEASE] = _LATE_EXTEND
        return f"not exercised: {renewed}"
    first_raised(raised)
    return judged_positions(
        ctx,
        steps,
        "extend",
        returned,
        _LATE_EXTEND,
        f"a holder stalled before each of the {steps} round trip(s) of its extend left its successor's "
        "lease as it was",
    )


def _lease_runs_out(ctx: CheckContext) -> str:
    """The control: "" when a lease of the successor's length, never extended, runs out by itself;
    else why a late extend's effect cannot be told apart from the lock's own renewal."""
    control = ctx.namespace.key("stale-extend", "control")
    b0, c0 = (
        ctx.factory(ctx.client(), control, ctx.ttl(SUCCESSOR_TTL)),
        ctx.factory(ctx.client(), control, ctx.ttl(LONG_TTL)),
    )
    with expect("B acquires a free lock", prop=PROGRESS):
        if not granted(b0.acquire(blocking=False)):
            raise CheckFailed("B could not acquire a free lock", prop=PROGRESS)
    time.sleep((ctx.ttl(SUCCESSOR_TTL) + SLACK_MS) / 1000)
    with expect("C acquires once B's lease ran out", prop=CRASH_LIVENESS):
        if not granted(c0.acquire(blocking=False)):
            return (
                f"a lease here outlives its {ctx.ttl(SUCCESSOR_TTL)} ms TTL by itself (renewed while its "
                "holder lives?): what a stale extend does to it cannot be told apart"
            )
    with contextlib.suppress(Exception):
        c0.release()
    return ""


def _stale_extend_position(ctx: CheckContext, extra: list[redis.Redis], k: int, steps: int) -> str:
    """The holder stalls at position `k` of its extend: "" when the successor's lease ran out as
    it should, or why there was no successor to harm."""
    where = where_stalled(k, steps, "extend")
    ctx.note(f"stale-extend: the holder stalls {where}")
    key = ctx.namespace.key("stale-extend", k)
    b = ctx.factory(ctx.client(), key, ctx.ttl(SUCCESSOR_TTL))
    c = ctx.factory(ctx.client(), key, ctx.ttl(LONG_TTL))
    thread, trips = _stalled_holder(ctx, extra, key, k, "extend")
    time.sleep(ctx.ttl(FAULT_TTL) / 1000 + 0.05)  # A's lease runs out while it is stalled
    try:
        with expect("B acquires after A's lease expired", prop=PROGRESS):
            took = granted(b.acquire(blocking=True, timeout=ctx.ttl(FAULT_TTL) * 3 / 1000))
        taken_at = time.monotonic()
    finally:
        trips.resume()
        thread.join(10)
    if not took:
        return f"the lease never expired ({key_state(ctx.namespace.client, key)})"
    time.sleep(max(0.0, taken_at + (ctx.ttl(SUCCESSOR_TTL) + SLACK_MS) / 1000 - time.monotonic()))
    with expect("C acquires once B's lease ran out", prop=SAFE_RELEASE):
        if not granted(c.acquire(blocking=False)):
            raise CheckFailed(
                f"A stalled {where} until its lease expired; its late extend prolonged B's "
                f"{ctx.ttl(SUCCESSOR_TTL)} ms lease: {ctx.ttl(SUCCESSOR_TTL) + SLACK_MS} ms after B acquired, C still "
                f"could not ({key_state(ctx.namespace.client, key)})"
            )
    with contextlib.suppress(Exception):
        c.release()
    return ""


# --- a holder that crashes --------------------------------------------------------------------------


def crash_check(ctx: CheckContext) -> str:
    """The holder dies after each round trip of its acquire, and a waiter dies in the queue (each
    case on a key of its own, all at once); another client must get the lock within a few TTLs
    each time."""
    bound = ctx.ttl(FAULT_TTL) * 3 / 1000 + 0.5
    with own_clients() as extra:
        probe_client, probe_trips = tapped_client(ctx, extra)
        for i in range(3):  # warm up: scripts loaded, then count the last acquire's round trips
            probe = ctx.factory(probe_client, ctx.namespace.key("crash-probe", i), ctx.ttl(FAULT_TTL))
            probe_trips.sent = 0
            with expect("an uncontended acquire"):
                probe.acquire(blocking=False)
        steps = max(1, probe_trips.sent)
        cases: dict[int, Callable[[], None]] = {
            k: functools.partial(_holder_crashes, ctx, extra, k, steps, bound) for k in range(1, steps + 1)
        }
        cases[steps + 1] = functools.partial(_waiter_crashes, ctx, extra, bound)
        _, raised = at_once(cases)
    first_raised(raised)
    return f"crashed after each of {steps} acquire round trip(s), and while queued: others acquired within {bound:.1f} s"


def _holder_crashes(ctx: CheckContext, extra: list[redis.Redis], k: int, steps: int, bound: float) -> None:
    """The holder dies after round trip `k` of its acquire (after the last: holding the lock)."""
    key = ctx.namespace.key("crash", k)
    client, trips = tapped_client(ctx, extra)
    holder = ctx.factory(client, key, ctx.ttl(FAULT_TTL))
    trips.crash_after(k)
    with contextlib.suppress(SimulatedCrash):
        holder.acquire(blocking=False)
    trips.crash_after(0)
    when = (
        f"after round trip {k} of its {steps}-round-trip acquire"
        if k < steps
        else "holding the lock (acquire done)"
    )
    _waiter_must_acquire(ctx, key, bound, f"the holder crashed {when}")


def _waiter_crashes(ctx: CheckContext, extra: list[redis.Redis], bound: float) -> None:
    """A waiter that dies while queued behind a holder must not block those after it."""
    key = ctx.namespace.key("crash-waiter")
    holder = ctx.factory(ctx.client(), key, ctx.ttl(FAULT_TTL))
    with expect("the holder's acquire"):
        holder.acquire(blocking=False)
    client, trips = tapped_client(ctx, extra)
    waiter = ctx.factory(client, key, ctx.ttl(FAULT_TTL))
    trips.crash_after(2)
    dead = threading.Thread(target=_swallow_crash, args=(waiter,), daemon=True)
    dead.start()
    dead.join(bound)
    with contextlib.suppress(Exception):
        holder.release()
    _waiter_must_acquire(ctx, key, bound, "a waiter crashed while queued and the holder released")


def _swallow_crash(lock: Any) -> None:
    with contextlib.suppress(SimulatedCrash, Exception):
        lock.acquire(blocking=True, timeout=5)


def _waiter_must_acquire(ctx: CheckContext, key: str, bound: float, what: str) -> None:
    waiter = ctx.factory(ctx.client(), key, ctx.ttl(FAULT_TTL))  # the holder's TTL: a waiter may renew it
    start = time.monotonic()
    ctx.note(f"crash: {what}; another client waits up to {bound:.1f} s")
    with expect(f"{what}: another client's acquire"):
        got = granted(waiter.acquire(blocking=True, timeout=bound))
    if not got:
        raise CheckFailed(
            f"{what}; another client waited {time.monotonic() - start:.1f} s "
            f"({bound / (ctx.ttl(FAULT_TTL) / 1000):.1f} TTLs) in vain; left behind: {key_state(ctx.namespace.client, key)}"
        )
    with contextlib.suppress(Exception):
        waiter.release()
