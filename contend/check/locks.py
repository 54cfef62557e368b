"""The lock battery: each lock against the lease model, seed 002's test, bursts, expiry, crashes,
fencing, clock skew and bad input.

Every check drives an implementation only through its protocol factory
(`factory(client, key, ttl_ms)`), each client on a connection of its own.
Checks whose fault needs a capability the implementation lacks (a clock to
skew) or a property it does not claim (fencing) do not run for it: the table
cell is empty. `COMMON` are the checks every lease shares, semaphores included.
Expiry, stale-extend and crash are contend.check.lock_faults'. The burst and bad input run async
code too; its expiry and crash are contend.check.async_faults' (the round-trip tap that stalls
and crashes a holder wraps redis-py's synchronous connection only).
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

from contend.check.bad_input import LOCK_BAD_INPUT
from contend.check.burst import burst, crowd, errors_summary
from contend.check.faults import (
    FAULT_TTL,
    LONG_TTL,
    MODEL_TTL,
    Inconclusive,
    key_state,
    pause_all,
    up_to_three_runs,
)
from contend.check.framework import Check, CheckContext, CheckFailed, expect
from contend.check.lock_faults import crash_check, expiry_check, stale_extend_check
from contend.impl.catalog import (
    CLOCK_SKEW_SAFE,
    CRASH_LIVENESS,
    FENCING,
    MUTUAL_EXCLUSION,
    PROGRESS,
    SAFE_RELEASE,
)
from contend.impl.locks.fenced import FencedResource
from contend.models.base import UNKNOWN, Op
from contend.models.lease import LeaseModel
from contend.subject.protocols import fencing_token, granted

# --- the lease model, step by step ----------------------------------------------------------------


def model_check(ctx: CheckContext) -> str:
    """Random acquire/release/extend by 3 clients and expiry events, each compared with models.lease."""
    return up_to_three_runs(ctx, _lease_sequence)


def _lease_sequence(ctx: CheckContext, n: int, attempt: int) -> str:
    rng = random.Random(ctx.options.seed)
    key = ctx.namespace.key("model", attempt)
    procs = [f"p{i}" for i in range(3)]
    tapped = {p: ctx.tapped_client() for p in procs}
    clients = {p: client for p, (client, _) in tapped.items()}
    fencing = ctx.subject.capabilities.fencing if ctx.subject.capabilities else None
    extendable = bool(ctx.subject.capabilities and ctx.subject.capabilities.extend)
    model = LeaseModel(fenced=fencing is not None)
    state = model.init()
    held: dict[str, Any] = {}
    renewed: dict[str, float] = {}
    recent: collections.deque[str] = collections.deque(maxlen=6)
    others_since_grant: list[str] = []  # releases and extends by non-holders since the last grant
    expired_since_grant = False  # a lease ran out since the last grant (a lock free only through expiry)
    stored_since_grant = True  # the last grant left a key on the server (else no release could free it)
    expiries = sorted(rng.sample(range(5, n), 4))
    expired = 0
    for step in range(n):
        ctx.note(f"model: operation {step} of {n}")
        if expiries and step >= expiries[0] and state.holder is not None:
            expiries.pop(0)
            pause_all([trips for _, trips in tapped.values()], ctx.ttl(MODEL_TTL) / 1000 + 0.05)
            _, state = model.apply(state, "expire")
            renewed.clear()
            recent.append("expire")
            expired += 1
            expired_since_grant = True
            continue
        p = rng.choice(procs)
        roll = rng.random()
        f = "acquire" if roll < 0.45 else "release" if roll < 0.8 or not extendable else "extend"
        # A fresh object per acquire (a client may take the lock again after its lease expired);
        # release and extend use the client's latest lock object, or one that never acquired.
        lock = (
            ctx.factory(clients[p], key, ctx.ttl(MODEL_TTL)) if f == "acquire" or p not in held else held[p]
        )
        output: Any = UNKNOWN  # what release and extend return is not judged, only their effect
        if f == "acquire":
            with expect(f"op {step}: {p} acquire", prop=MUTUAL_EXCLUSION):
                got = lock.acquire(blocking=False)
            output = False
            if granted(got):
                output = fencing_token(lock, got, fencing) if fencing else True
        else:
            if f == "release":
                held.pop(p, None)
            with contextlib.suppress(Exception):  # refusing is allowed: the effect is what counts
                lock.release() if f == "release" else lock.extend(ctx.ttl(MODEL_TTL))
        done = time.monotonic()
        expected, _ = model.apply(state, f, None, p)
        if f != "acquire" and state.holder != p:
            others_since_grant.append(f"{p} {f}")
        recent.append(f"{p} {f}" + ("" if output is UNKNOWN else f" → {output!r}"))
        legal, nxt = model.step(state, Op(f, None, output, key, p))
        if not legal:
            if (
                state.holder is not None
                and done - renewed.get(str(state.holder), done) > ctx.ttl(MODEL_TTL) * 0.7 / 1000
            ):
                raise Inconclusive
            raise CheckFailed(
                f"op {step}: {p} {f} returned {output!r}; the model says {expected!r} "
                f"(state: {model.describe_state(state)}; last ops: {'; '.join(recent)})",
                prop=_property_broken(
                    expected,
                    output,
                    others_released=bool(others_since_grant) and stored_since_grant,
                    expired=expired_since_grant,
                ),
            )
        if f == "acquire" and output is not False:
            held[p] = lock
            renewed[p] = done
            others_since_grant.clear()
            expired_since_grant = False
            stored = ctx.namespace.keys()  # (store, key) pairs of the run namespace
            stored_since_grant = any(key in k.decode(errors="replace") for _, k in stored)
        state = nxt
    return f"{n} operations by 3 clients with {expired} expiries agree with the {model.name} model"


def _property_broken(expected: Any, output: Any, *, others_released: bool, expired: bool) -> str:
    """The property a step the lease model refuses breaks: a grant while the lock is held breaks
    safe release when a non-holder released or extended since the last grant (and that grant left
    a key to free), else mutual exclusion; a refused acquire of a free lock breaks crash liveness
    when the lock was freed by expiry (its lease outlived its TTL), else safe release when a
    non-holder released or extended since the last grant (a stale extend that overwrote the
    holder's lease, which its own release then could not free), else progress; a wrong token
    breaks fencing."""
    if expected is False:
        return SAFE_RELEASE if others_released else MUTUAL_EXCLUSION
    if output is False:
        if expired:
            return CRASH_LIVENESS
        return SAFE_RELEASE if others_released else PROGRESS
    return FENCING


# --- seed 002's multi-process test, in threads ------------------------------------------------------


#: How long one of seed 002's increments may wait for the lock (s). The seed's own test gave 20
#: processes × 100 increments 100 retries of 0.25 s; here 8 clients × 25 increments, each done in
#: about a millisecond, so the longest wait seen on the scoreboard's libraries is under a second.
SEED002_WAIT = 10


def seed002_check(ctx: CheckContext) -> str:
    """Seed 002's test_multi_process: 8 clients × 25 locked GET/SET increments make exactly 200."""
    k, m = 8, 25
    lock_key, counter = ctx.namespace.key("spam"), ctx.namespace.key("ham")
    clients = [ctx.client() for _ in range(k)]

    def increments(client: redis.Redis) -> None:
        lock = ctx.factory(client, lock_key, ctx.ttl(LONG_TTL))
        for i in range(m):
            if not lock.acquire(blocking=True, timeout=SEED002_WAIT):
                raise CheckFailed(f"increment {i}: acquire(timeout={SEED002_WAIT}) gave up", prop=PROGRESS)
            ham = int(client.get(counter) or 0)
            client.set(counter, ham + 1)
            lock.release()

    outcomes = burst([functools.partial(increments, c) for c in clients], timeout=120)
    if failed := errors_summary(outcomes):
        # Acquires that only gave up starved (progress); anything else the code raised is judged
        # as the check's property, as before.
        props = {getattr(o.error, "property", None) for o in outcomes if o.error is not None}
        raise CheckFailed(
            f"{k} clients × {m} locked increments: {failed}", prop=PROGRESS if props == {PROGRESS} else None
        )
    total = int(clients[0].get(counter) or 0)
    if total != k * m:
        raise CheckFailed(f"{k} clients × {m} locked increments left the counter at {total}, not {k * m}")
    return f"{k} clients × {m} locked read-modify-write increments: exactly {k * m}"


# --- mutual exclusion under a burst ---------------------------------------------------------------


def _claims(ctx: CheckContext, prop: str) -> bool:
    """Does the row claim `prop` (True for a context without a subject)?"""
    return ctx.subject is None or prop in ctx.subject.claims


def burst_check(ctx: CheckContext) -> str:
    """Clients released together try to take one lock, round after round; every other round the
    lock is held by an expired lease of a crashed holder. At most one may win; when none does, a
    client trying alone must (a try-lock may lose to contention, not to a stuck lock). Each client
    acquires and releases in its own thread (thread-local tokens work).

    For async code the clients are tasks on one loop (contend.check.burst.Crowd), the winner
    releases once they are all done, and every round is on a free lock: a crashed holder is made
    by the round-trip tap, which crashes redis-py's connections, not redis.asyncio's."""
    k, rounds = ctx.options.burst_clients, ctx.options.burst_rounds
    split = 0  # rounds nobody won, though the lock was free (a client alone then took it)
    with crowd(ctx, k) as together:
        for r in range(rounds):
            ctx.note(f"burst: round {r + 1} of {rounds}")
            key = ctx.namespace.key("burst", r)
            # A crashed holder's lock is only free again for a lock that claims crash liveness.
            stale = r % 2 == 1 and not together.asynchronous and _claims(ctx, CRASH_LIVENESS)
            if stale:
                _crashed_holder(ctx, key, r)
            locks = [ctx.factory(c, key, ctx.ttl(LONG_TTL)) for c in together.clients]
            if together.asynchronous:
                outcomes = together.at_once([functools.partial(_try_once, lock) for lock in locks])
                for lock, outcome in zip(locks, outcomes, strict=True):
                    if outcome.ok and outcome.value:
                        with contextlib.suppress(Exception):
                            together.call(lock.release)
            else:
                all_tried = threading.Barrier(k)
                outcomes = together.at_once(
                    [functools.partial(take_then_give_back, lock, all_tried) for lock in locks], timeout=60
                )
            what = f"round {r + 1}: {k} {together.who} at once on a lock " + (
                "whose holder crashed and whose lease expired" if stale else "nobody held"
            )
            winners = sum(1 for o in outcomes if o.ok and o.value)
            if winners > 1:
                raise CheckFailed(f"{what}: {winners} acquired it")
            if not winners:
                # A try-lock may lose to contention (Redlock's split vote over several masters);
                # the lock is only stuck if a client trying alone cannot take it either.
                alone = ctx.factory(together.clients[0], key, ctx.ttl(LONG_TTL))
                with expect(f"{what}: none acquired it; then one {together.who[:-1]} alone", prop=PROGRESS):
                    got = granted(together.call(functools.partial(alone.acquire, blocking=False)))
                if not got:
                    errors = errors_summary(outcomes)
                    raise CheckFailed(
                        f"{what}: none acquired it, nor one {together.who[:-1]} alone afterwards "
                        f"({key_state(ctx.namespace.client, key)})" + (f"; {errors}" if errors else ""),
                        prop=CRASH_LIVENESS if stale else PROGRESS,
                    )
                with contextlib.suppress(Exception):
                    together.call(alone.release)
                split += 1
        if together.asynchronous:
            summary = f"{rounds} rounds of {k} tasks at once (asyncio.gather, pre-connected clients): at most one winner each"
            return summary + (f"; in {split} round(s) none won, and a task alone then did" if split else "")
    summary = f"{rounds} rounds of {k} clients at once, half on an expired lease: at most one winner each"
    if split:
        return summary + f"; in {split} round(s) none won, and a client alone then did"
    return summary.replace("at most one winner each", "one winner each")


def _crashed_holder(ctx: CheckContext, key: str, r: int) -> None:
    """A holder takes the lock with a short lease and dies (a renewer of its lease with it); its
    lease then runs out."""
    dead_ttl = ctx.ttl(30)
    dead_client, dead_trips = ctx.tapped_client()
    dead = ctx.factory(dead_client, key, dead_ttl)
    with expect(f"round {r + 1}: the stale holder's acquire", prop=PROGRESS):
        if not granted(dead.acquire(blocking=False)):
            raise CheckFailed(f"round {r + 1}: a free lock could not be acquired", prop=PROGRESS)
    dead_trips.crash_after(0)  # the holder dies (and a renewer of its lease with it)
    time.sleep(dead_ttl / 1000 + 0.02)


async def _try_once(lock: Any) -> bool:
    """An async lock's one try."""
    return granted(await lock.acquire(blocking=False))


def take_then_give_back(lock: Any, all_tried: threading.Barrier) -> bool:
    """Try once; once every client has tried, the winner releases, in the thread that acquired."""
    try:
        got = granted(lock.acquire(blocking=False))
    finally:
        all_tried.wait(60)
    if got:
        with contextlib.suppress(Exception):
            lock.release()
    return got


# --- fencing ------------------------------------------------------------------------------------------


def fencing_check(ctx: CheckContext) -> str:
    """Tokens grow with every grant, and a holder paused past its lease has its late write refused
    by a resource that keeps the highest token it has seen."""
    how = ctx.subject.capabilities.fencing
    key, resource_key = ctx.namespace.key("fenced"), ctx.namespace.key("resource")
    a, b = (
        ctx.factory(ctx.client(), key, ctx.ttl(FAULT_TTL)),
        ctx.factory(ctx.client(), key, ctx.ttl(LONG_TTL)),
    )
    resource = FencedResource(ctx.client(), resource_key)
    tokens: list[int | None] = []
    for i in range(5):
        lock = ctx.factory(ctx.client(), key, ctx.ttl(LONG_TTL))
        with expect(f"grant {i + 1}", prop=PROGRESS):
            got = lock.acquire(blocking=False)
            tokens.append(fencing_token(lock, got, how) if granted(got) else None)
        with contextlib.suppress(Exception):
            lock.release()
    if None in tokens or any(y <= x for x, y in itertools.pairwise(tokens)):  # type: ignore[operator]
        raise CheckFailed(f"five grants in a row carried fencing tokens {tokens}: not strictly increasing")
    with expect("A acquires and writes", prop=PROGRESS):
        token_a = fencing_token(a, a.acquire(blocking=False), how)
        if token_a is None:
            raise CheckFailed("A could not acquire a free lock (or got no token)", prop=PROGRESS)
        resource.write(token_a, "from A")
    time.sleep(ctx.ttl(FAULT_TTL) / 1000 + 0.05)  # A pauses past its lease
    with expect("B acquires and writes", prop=PROGRESS):
        token_b = fencing_token(b, b.acquire(blocking=True, timeout=2), how)
        if token_b is None:
            raise CheckFailed("B could not acquire after A's lease expired (or got no token)", prop=PROGRESS)
        resource.write(token_b, "from B")
    try:
        resource.write(token_a, "late write from A")
    except Exception as exc:
        refused = f"{type(exc).__name__}"
    else:
        raise CheckFailed(
            f"A (token {token_a}) wrote after B (token {token_b}) had: the stale write was accepted"
        )
    if (value := resource.read()) != b"from B":
        raise CheckFailed(f"the resource holds {value!r} after A's refused write, not B's")
    return f"tokens {tokens} grow; A's late write with token {token_a} < {token_b} refused ({refused})"


# --- clock skew ---------------------------------------------------------------------------------------


def skew_check(ctx: CheckContext) -> str:
    """A client whose clock runs ahead by twice the TTL must not take a lock whose lease is valid."""
    ttl = ctx.ttl(1_000)
    key = ctx.namespace.key("skew")
    a = ctx.factory(ctx.client(), key, ttl)
    b = ctx.factory(ctx.client(), key, ttl, clock=lambda: time.time() + 2 * ttl / 1000)
    with expect("A acquires a free lock", prop=PROGRESS):
        if not granted(a.acquire(blocking=False)):
            raise CheckFailed("A could not acquire a free lock", prop=PROGRESS)
    with expect("B (clock 2 s ahead) tries"):
        if granted(b.acquire(blocking=False)):
            raise CheckFailed(
                f"B, whose clock runs {2 * ttl} ms ahead, acquired the lock A took a moment ago "
                f"with a {ttl} ms lease: two holders"
            )
    with contextlib.suppress(Exception):
        a.release()
    return f"a client {2 * ttl} ms ahead could not take a live {ttl} ms lease"


# --- the battery --------------------------------------------------------------------------------------

COMMON = [
    Check("model", "random operations and expiries against the lease model", model_check, MUTUAL_EXCLUSION),
    Check(
        "seed-002", "8 clients × 25 locked increments: exactly 200", seed002_check, MUTUAL_EXCLUSION,
        needs=MUTUAL_EXCLUSION,
    ),
    Check(
        "burst", "16 clients at once, on a free and on an expired lock", burst_check, MUTUAL_EXCLUSION,
        needs=MUTUAL_EXCLUSION,
    ),
    Check(
        "expiry", "a release stalled past expiry leaves the successor alone", expiry_check, SAFE_RELEASE,
        needs=SAFE_RELEASE,
    ),
    Check(
        "stale-extend", "an extend stalled past expiry does not prolong the successor's lease",
        stale_extend_check, SAFE_RELEASE, needs=SAFE_RELEASE, capability="extend",
    ),
    Check(
        "crash", "a holder crashed at every round trip; others get in", crash_check, CRASH_LIVENESS,
        needs=CRASH_LIVENESS,
    ),
]  # fmt: skip

LOCK_CHECKS: list[Check] = [
    *COMMON,
    Check(
        "fencing", "growing tokens; a paused holder's late write refused", fencing_check, FENCING,
        needs=FENCING, capability="fencing",
    ),
    Check(
        "skew", "a client whose clock runs ahead", skew_check, CLOCK_SKEW_SAFE,
        needs=CLOCK_SKEW_SAFE, capability="clock",
    ),
    LOCK_BAD_INPUT,
]  # fmt: skip

#: The burst as async code meets it: the same check (burst_check), on tasks.
ASYNC_BURST = Check(
    "burst",
    "tasks on pre-connected clients released together (asyncio.gather): at most one winner",
    burst_check,
    MUTUAL_EXCLUSION,
    needs=MUTUAL_EXCLUSION,
)
