"""The lock battery: each lock against the lease model, seed 002's test, bursts, expiry, crashes,
fencing, clock skew and bad input.

Every check drives an implementation only through its protocol factory
(`factory(client, key, ttl_ms)`), each client on a connection of its own.
Checks whose fault needs a capability the implementation lacks (a clock to
skew) or a property it does not claim (fencing) do not run for it: the table
cell is empty. `COMMON` are the checks every lease shares, semaphores included.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import itertools
import random
import threading
import time
from typing import Any

import redis

from contend.check.burst import burst, errors_summary
from contend.check.faults import (
    FAULT_TTL,
    LONG_TTL,
    MODEL_TTL,
    Inconclusive,
    key_state,
    own_clients,
    tapped_client,
    up_to_three_runs,
)
from contend.check.framework import Check, CheckContext, CheckFailed, LockCheck, expect, expect_rejected
from contend.impl.catalog import (
    CLOCK_SKEW_SAFE,
    CRASH_LIVENESS,
    FENCING,
    MUTUAL_EXCLUSION,
    SAFE_RELEASE,
)
from contend.impl.locks.fenced import FencedResource
from contend.models.base import UNKNOWN, Op
from contend.models.lease import LeaseModel
from contend.target.tap import SimulatedCrash

# --- the lease model, step by step ----------------------------------------------------------------


def model_check(ctx: CheckContext) -> str:
    """Random acquire/release/extend by 3 clients and expiry events, each compared with models.lease."""
    return up_to_three_runs(ctx, _lease_sequence)


def _lease_sequence(ctx: CheckContext, n: int, attempt: int) -> str:
    rng = random.Random(ctx.options.seed)
    key = ctx.namespace.key("model", attempt)
    procs = [f"p{i}" for i in range(3)]
    clients = {p: ctx.client() for p in procs}
    probe = ctx.factory(clients["p0"], key, MODEL_TTL)
    fenced = hasattr(probe, "fencing_token")
    extendable = callable(getattr(probe, "extend", None))
    model = LeaseModel(fenced=fenced)
    state = model.init()
    held: dict[str, Any] = {}
    renewed: dict[str, float] = {}
    recent: collections.deque[str] = collections.deque(maxlen=6)
    expiries = sorted(rng.sample(range(5, n), 4))
    expired = 0
    for step in range(n):
        if expiries and step >= expiries[0] and state.holder is not None:
            expiries.pop(0)
            time.sleep(MODEL_TTL / 1000 + 0.05)
            _, state = model.apply(state, "expire")
            renewed.clear()
            recent.append("expire")
            expired += 1
            continue
        p = rng.choice(procs)
        roll = rng.random()
        f = "acquire" if roll < 0.45 else "release" if roll < 0.8 or not extendable else "extend"
        # A fresh object per acquire (a client may take the lock again after its lease expired);
        # release and extend use the client's latest lock object, or one that never acquired.
        lock = ctx.factory(clients[p], key, MODEL_TTL) if f == "acquire" or p not in held else held[p]
        output: Any
        with expect(f"op {step}: {p} {f}"):
            if f == "acquire":
                got = lock.acquire(blocking=False)
                output = (lock.fencing_token if fenced else True) if got else False
            elif f == "release":
                held.pop(p, None)
                try:
                    lock.release()
                    output = "ok"
                except Exception:
                    output = "not-owner"
            else:
                try:
                    output = True if lock.extend(MODEL_TTL) else "not-owner"
                except Exception:
                    output = "not-owner"
        done = time.monotonic()
        expected, _ = model.apply(state, f, None, p)
        if f == "release" and output == "ok" and expected != "ok":
            output = UNKNOWN  # the protocol lets a release of a lost lease return quietly; later ops show its effect
        recent.append(f"{p} {f} → {output!r}")
        legal, nxt = model.step(state, Op(f, None, output, key, p))
        if not legal:
            if (
                state.holder is not None
                and done - renewed.get(str(state.holder), done) > MODEL_TTL * 0.7 / 1000
            ):
                raise Inconclusive
            raise CheckFailed(
                f"op {step}: {p} {f} returned {output!r}; the model says {expected!r} "
                f"(state: {model.describe_state(state)}; last ops: {'; '.join(recent)})"
            )
        if output is True or (fenced and f == "acquire" and output is not False):
            held[p] = lock
            renewed[p] = done
        elif f == "extend":
            held.pop(p, None)
        state = nxt
    return f"{n} operations by 3 clients with {expired} expiries agree with the {model.name} model"


# --- seed 002's multi-process test, in threads ------------------------------------------------------


def seed002_check(ctx: CheckContext) -> str:
    """Seed 002's test_multi_process: 8 clients × 25 locked GET/SET increments make exactly 200."""
    k, m = 8, 25
    lock_key, counter = ctx.namespace.key("spam"), ctx.namespace.key("ham")
    clients = [ctx.client() for _ in range(k)]

    def increments(client: redis.Redis) -> None:
        lock = ctx.factory(client, lock_key, LONG_TTL)
        for i in range(m):
            if not lock.acquire(blocking=True, timeout=20):
                raise CheckFailed(f"increment {i}: acquire(timeout=20) gave up")
            ham = int(client.get(counter) or 0)
            client.set(counter, ham + 1)
            lock.release()

    outcomes = burst([functools.partial(increments, c) for c in clients], timeout=120)
    if failed := errors_summary(outcomes):
        raise CheckFailed(f"{k} clients × {m} locked increments: {failed}")
    total = int(clients[0].get(counter) or 0)
    if total != k * m:
        raise CheckFailed(f"{k} clients × {m} locked increments left the counter at {total}, not {k * m}")
    return f"{k} clients × {m} locked read-modify-write increments: exactly {k * m}"


# --- mutual exclusion under a burst ---------------------------------------------------------------


def burst_check(ctx: CheckContext) -> str:
    """Clients released together try to take one lock, round after round; every other round the
    lock is held by an expired lease of a crashed holder. At most one may win."""
    k, rounds = ctx.options.burst_clients, ctx.options.burst_rounds
    clients = [ctx.client() for _ in range(k)]
    for r in range(rounds):
        key = ctx.namespace.key("burst", r)
        stale = r % 2 == 1
        if stale:
            dead = ctx.factory(clients[0], key, 30)
            with expect(f"round {r + 1}: the stale holder's acquire"):
                if not dead.acquire(blocking=False):
                    raise CheckFailed(f"round {r + 1}: a free lock could not be acquired")
            time.sleep(0.05)
        locks = [ctx.factory(c, key, LONG_TTL) for c in clients]
        outcomes = burst([functools.partial(lock.acquire, blocking=False) for lock in locks])
        what = f"round {r + 1}: {k} clients at once on a lock " + (
            "whose holder crashed and whose lease expired" if stale else "nobody held"
        )
        if failed := errors_summary(outcomes):
            raise CheckFailed(f"{what}: {failed}")
        winners = [lock for lock, o in zip(locks, outcomes, strict=True) if o.value]
        if len(winners) > 1:
            raise CheckFailed(f"{what}: {len(winners)} acquired it")
        if not winners:
            raise CheckFailed(f"{what}: none acquired it ({key_state(clients[0], key)})")
        with expect(f"{what}: the winner's release"):
            winners[0].release()
    return f"{rounds} rounds of {k} clients at once, half on an expired lease: one winner each"


# --- a lease that expires under its holder ----------------------------------------------------------


def expiry_check(ctx: CheckContext) -> str:
    """A pauses past its TTL and B takes the lock; A's late release must leave B's lease alone."""
    key = ctx.namespace.key("expiry")
    a = ctx.factory(ctx.client(), key, FAULT_TTL)
    b, c, d = (ctx.factory(ctx.client(), key, LONG_TTL) for _ in range(3))  # long: no stall ends them
    with expect("A acquires a free lock"):
        if not a.acquire(blocking=False):
            raise CheckFailed("A could not acquire a free lock")
    time.sleep(FAULT_TTL / 1000 + 0.05)
    with expect("B acquires after A's lease expired"):
        if not b.acquire(blocking=True, timeout=FAULT_TTL * 3 / 1000):
            # No successor, so no successor's lease to free: safe release holds vacuously.
            # A lease that never ends is a liveness failure, the crash check's business.
            return (
                f"the lease never expired (B waited {FAULT_TTL * 3} ms in vain; "
                f"{key_state(ctx.namespace.client, key)}): no successor to harm"
            )
    with contextlib.suppress(Exception):
        a.release()  # raising or returning quietly are both allowed; deleting B's lease is not
    with expect("C tries while B holds the lock"):
        if c.acquire(blocking=False):
            raise CheckFailed(
                "A's release after its lease expired freed B's lease: C acquired while B held the lock"
            )
    with expect("B releases its own lease"):
        b.release()
    with expect("D acquires after B released"):
        if not d.acquire(blocking=False):
            raise CheckFailed("after B released, D could not acquire")
    return "A's late release left B's lease alone; B released normally"


# --- a holder that crashes --------------------------------------------------------------------------


def crash_check(ctx: CheckContext) -> str:
    """The holder dies after each round trip of its acquire, and a waiter dies in the queue; another
    client must get the lock within a few TTLs each time."""
    bound = FAULT_TTL * 3 / 1000 + 0.5
    with own_clients() as extra:
        probe_client, probe_trips = tapped_client(ctx, extra)
        for i in range(3):  # warm up: scripts loaded, then count the last acquire's round trips
            probe = ctx.factory(probe_client, ctx.namespace.key("crash-probe", i), FAULT_TTL)
            probe_trips.sent = 0
            with expect("an uncontended acquire"):
                probe.acquire(blocking=False)
        steps = max(1, probe_trips.sent)
        for k in range(1, steps + 1):
            key = ctx.namespace.key("crash", k)
            client, trips = tapped_client(ctx, extra)
            holder = ctx.factory(client, key, FAULT_TTL)
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

        # A waiter that dies while queued behind a holder must not block those after it.
        key = ctx.namespace.key("crash-waiter")
        holder = ctx.factory(ctx.client(), key, FAULT_TTL)
        with expect("the holder's acquire"):
            holder.acquire(blocking=False)
        client, trips = tapped_client(ctx, extra)
        waiter = ctx.factory(client, key, FAULT_TTL)
        trips.crash_after(2)
        dead = threading.Thread(target=_swallow_crash, args=(waiter,), daemon=True)
        dead.start()
        dead.join(bound)
        with contextlib.suppress(Exception):
            holder.release()
        _waiter_must_acquire(ctx, key, bound, "a waiter crashed while queued and the holder released")
    return f"crashed after each of {steps} acquire round trip(s), and while queued: others acquired within {bound:.1f} s"


def _swallow_crash(lock: Any) -> None:
    with contextlib.suppress(SimulatedCrash, Exception):
        lock.acquire(blocking=True, timeout=5)


def _waiter_must_acquire(ctx: CheckContext, key: str, bound: float, what: str) -> None:
    waiter = ctx.factory(ctx.client(), key, FAULT_TTL)  # the holder's TTL: a waiter may renew it
    start = time.monotonic()
    with expect(f"{what}: another client's acquire"):
        got = waiter.acquire(blocking=True, timeout=bound)
    if not got:
        raise CheckFailed(
            f"{what}; another client waited {time.monotonic() - start:.1f} s "
            f"({bound / (FAULT_TTL / 1000):.1f} TTLs) in vain; left behind: {key_state(ctx.namespace.client, key)}"
        )
    granted = time.monotonic()
    try:
        waiter.release()
    except Exception as exc:
        if time.monotonic() - granted < FAULT_TTL * 0.7 / 1000:  # else a stall outlasted the lease
            raise CheckFailed(f"{what}: the new holder's release raised {type(exc).__name__}: {exc}") from exc


# --- fencing ------------------------------------------------------------------------------------------


def fencing_check(ctx: CheckContext) -> str:
    """Tokens grow with every grant, and a holder paused past its lease has its late write refused."""
    key, resource_key = ctx.namespace.key("fenced"), ctx.namespace.key("resource")
    a, b = ctx.factory(ctx.client(), key, FAULT_TTL), ctx.factory(ctx.client(), key, LONG_TTL)
    resource = FencedResource(ctx.client(), resource_key)
    tokens = []
    for i in range(5):
        lock = ctx.factory(ctx.client(), key, LONG_TTL)
        with expect(f"grant {i + 1}"):
            lock.acquire(blocking=False)
            tokens.append(lock.fencing_token)
            lock.release()
    if not all(isinstance(t, int) for t in tokens) or any(y <= x for x, y in itertools.pairwise(tokens)):
        raise CheckFailed(f"five grants in a row carried fencing tokens {tokens}: not strictly increasing")
    with expect("A acquires and writes"):
        a.acquire(blocking=False)
        resource.write(a.fencing_token, "from A")
    time.sleep(FAULT_TTL / 1000 + 0.05)  # A pauses past its lease
    with expect("B acquires and writes"):
        if not b.acquire(blocking=True, timeout=2):
            raise CheckFailed("B could not acquire after A's lease expired")
        resource.write(b.fencing_token, "from B")
    try:
        resource.write(a.fencing_token, "late write from A")
    except Exception as exc:
        refused = f"{type(exc).__name__}"
    else:
        raise CheckFailed(
            f"A (token {a.fencing_token}) wrote after B (token {b.fencing_token}) had: the stale write was accepted"
        )
    if (value := resource.read()) != b"from B":
        raise CheckFailed(f"the resource holds {value!r} after A's refused write, not B's")
    return f"tokens {tokens} grow; A's late write with token {a.fencing_token} < {b.fencing_token} refused ({refused})"


# --- clock skew ---------------------------------------------------------------------------------------


def skew_check(ctx: CheckContext) -> str:
    """A client whose clock runs ahead by twice the TTL must not take a lock whose lease is valid."""
    ttl = 1_000
    key = ctx.namespace.key("skew")
    a = ctx.factory(ctx.client(), key, ttl)
    b = ctx.factory(ctx.client(), key, ttl, clock=lambda: time.time() + 2 * ttl / 1000)
    with expect("A acquires a free lock"):
        if not a.acquire(blocking=False):
            raise CheckFailed("A could not acquire a free lock")
    with expect("B (clock 2 s ahead) tries"):
        if b.acquire(blocking=False):
            raise CheckFailed(
                f"B, whose clock runs {2 * ttl} ms ahead, acquired the lock A took a moment ago "
                f"with a {ttl} ms lease: two holders"
            )
    with expect("A releases"):
        a.release()
    return f"a client {2 * ttl} ms ahead could not take a live {ttl} ms lease"


# --- bad input ----------------------------------------------------------------------------------------

BAD_TTLS: list[tuple[str, Any]] = [("ttl 0", 0), ("ttl -1", -1), ("ttl None", None), ("ttl 1.5", 1.5)]


def bad_input_check(ctx: CheckContext) -> str:
    """TTL <= 0, missing or not whole ms, and an empty key: ValueError; release without acquire raises."""
    client = ctx.client()
    key = ctx.namespace.key("bad")
    cases = [*BAD_TTLS, ("empty key", "")]
    for what, bad in cases:
        args = (client, bad, 1000) if what == "empty key" else (client, key, bad)
        expect_rejected(ctx, what, lambda a: ctx.factory(*a).acquire(blocking=False), args)
    lock = ctx.factory(client, key, 1000)
    try:
        lock.release()
    except Exception as exc:
        error = type(exc).__name__
    else:
        raise CheckFailed("release() of a lock never acquired returned quietly; it must raise")
    return f"{len(cases)} bad arguments: ValueError each, nothing written; release without acquire: {error}"


# --- the battery --------------------------------------------------------------------------------------

COMMON = [
    LockCheck("model", "random operations and expiries against the lease model", model_check),
    LockCheck("seed-002", "8 clients × 25 locked increments: exactly 200", seed002_check, MUTUAL_EXCLUSION),
    LockCheck("burst", "16 clients at once, on a free and on an expired lock", burst_check, MUTUAL_EXCLUSION),
    LockCheck("expiry", "a late release after expiry leaves the successor alone", expiry_check, SAFE_RELEASE),
    LockCheck("crash", "a holder crashed at every round trip; others get in", crash_check, CRASH_LIVENESS),
]

LOCK_CHECKS: list[Check] = [
    *COMMON,
    LockCheck("fencing", "growing tokens; a paused holder's late write refused", fencing_check, FENCING),
    LockCheck("skew", "a client whose clock runs ahead", skew_check, CLOCK_SKEW_SAFE, needs_clock=True),
    LockCheck("bad-input", "bad TTLs and keys: ValueError; release without acquire raises", bad_input_check),
]
