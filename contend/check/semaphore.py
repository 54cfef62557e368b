"""The semaphore battery's own checks: the semaphore model, exactly `limit` winners, FIFO for fair ones.

A semaphore also runs the lock checks every lease shares (`contend.check.locks.COMMON`).
"""

from __future__ import annotations

import collections
import contextlib
import functools
import random
import threading
import time
from typing import Any

from contend.check.bad_input import LOCK_BAD_INPUT
from contend.check.burst import burst, errors_summary
from contend.check.faults import (
    LONG_TTL,
    MODEL_TTL,
    Inconclusive,
    own_clients,
    pause_all,
    tapped_client,
    up_to_three_runs,
)
from contend.check.framework import Check, CheckContext, CheckFailed, expect
from contend.check.locks import COMMON, take_then_give_back
from contend.impl.catalog import CRASH_LIVENESS, FIFO, MUTUAL_EXCLUSION, PROGRESS, SAFE_RELEASE
from contend.models.base import UNKNOWN, Op
from contend.models.semaphore import SemaphoreModel
from contend.subject.protocols import granted


def semaphore_model_check(ctx: CheckContext) -> str:
    """Random acquire/release by 5 clients on a semaphore of 3, with expiries, against models.semaphore."""
    return up_to_three_runs(ctx, _semaphore_sequence)


def _semaphore_sequence(ctx: CheckContext, n: int, attempt: int) -> str:
    rng = random.Random(ctx.options.seed)
    key = ctx.namespace.key("model-n", attempt)
    limit = 3
    procs = [f"p{i}" for i in range(5)]
    tapped = {p: ctx.tapped_client() for p in procs}
    clients = {p: client for p, (client, _) in tapped.items()}
    model = SemaphoreModel(limit, fair=FIFO in ctx.subject.claims)
    state = model.init()
    held: dict[str, Any] = {}
    renewed: dict[str, float] = {}
    recent: collections.deque[str] = collections.deque(maxlen=8)
    non_holder_releases = 0  # since the last grant: a release that freed another's permit shows up next
    expired_since_grant = False  # a permit was freed by expiry since the last grant
    expiries = sorted(rng.sample(range(5, n), 3))
    expired = 0
    for step in range(n):
        ctx.note(f"model-n: operation {step} of {n}")
        if expiries and step >= expiries[0] and state.holders:
            expiries.pop(0)
            pause_all([trips for _, trips in tapped.values()], ctx.ttl(MODEL_TTL) / 1000 + 0.05)
            for q in sorted(map(str, state.holders)):
                _, state = model.apply(state, "expire", q)
            renewed.clear()
            recent.append("expire all")
            expired += 1
            expired_since_grant = True
            continue
        p = rng.choice(procs)
        # One object is one permit, so a client holding one would take a second: the model's
        # processes hold at most one, so a holder only releases.
        f = "acquire" if rng.random() < 0.55 and p not in state.holders else "release"
        output: Any = UNKNOWN  # what release returns is not judged, only its effect
        if f == "acquire":
            lock = ctx.factory(clients[p], key, ctx.ttl(MODEL_TTL), limit=limit)
            with expect(f"op {step}: {p} acquire", prop=MUTUAL_EXCLUSION):
                output = granted(lock.acquire(blocking=False))
        else:
            lock = held.pop(p, None) or ctx.factory(clients[p], key, ctx.ttl(MODEL_TTL), limit=limit)
            if p not in state.holders:
                non_holder_releases += 1
            with contextlib.suppress(Exception):  # refusing is allowed: the effect is what counts
                lock.release()
        done = time.monotonic()
        expected, _ = model.apply(state, f, None, p)
        recent.append(f"{p} {f}" + ("" if output is UNKNOWN else f" → {output!r}"))
        legal, nxt = model.step(state, Op(f, None, output, key, p))
        if not legal:
            if any(done - renewed.get(str(h), done) > ctx.ttl(MODEL_TTL) * 0.7 / 1000 for h in state.holders):
                raise Inconclusive
            prop = _property_broken(
                output, non_holder_releases=bool(non_holder_releases), expired=expired_since_grant, ctx=ctx
            )
            raise CheckFailed(
                f"op {step}: {p} {f} returned {output!r}; the model says {expected!r} "
                f"(state: {model.describe_state(state)}; last ops: {'; '.join(recent)})",
                prop=prop,
            )
        if f == "acquire" and output is True:
            held[p] = lock
            renewed[p] = done
            non_holder_releases = 0
            expired_since_grant = False
        state = nxt
    return f"{n} operations by 5 clients on {limit} permits with {expired} expiries agree with the {model.name} model"


def _property_broken(output: Any, *, non_holder_releases: bool, expired: bool, ctx: CheckContext) -> str:
    """The property a step the semaphore model refuses breaks, as the lease model check judges a
    lock's: a grant past the limit breaks safe release when a non-holder released since the last
    grant, else mutual exclusion; a refused acquire of a free permit breaks crash liveness when
    the permit was freed by expiry (a lease that outlived its TTL: an acquire that is refused
    returns, which progress asks no more of), else progress."""
    if output is False:
        return (
            CRASH_LIVENESS if expired and CRASH_LIVENESS in getattr(ctx.subject, "claims", ()) else PROGRESS
        )
    return SAFE_RELEASE if non_holder_releases else MUTUAL_EXCLUSION


def limit_check(ctx: CheckContext) -> str:
    """Clients released together on a semaphore of 3: exactly 3 win, round after round (each
    winner releases in the thread that acquired, once every client has tried)."""
    k, rounds, limit = ctx.options.burst_clients, max(1, ctx.options.burst_rounds // 4), 3
    clients = [ctx.client() for _ in range(k)]
    for r in range(rounds):
        ctx.note(f"limit-n: round {r + 1} of {rounds}")
        key = ctx.namespace.key("limit", r)
        sems = [ctx.factory(c, key, ctx.ttl(LONG_TTL), limit=limit) for c in clients]
        all_tried = threading.Barrier(k)
        outcomes = burst([functools.partial(take_then_give_back, s, all_tried) for s in sems])
        winners = sum(1 for o in outcomes if o.ok and o.value)
        if winners > limit:
            raise CheckFailed(f"round {r + 1}: {k} clients at once on {limit} permits: {winners} won")
        if winners < limit:
            errors = errors_summary(outcomes)
            raise CheckFailed(
                f"round {r + 1}: {k} clients at once on {limit} free permits: only {winners} won"
                + (f"; {errors}" if errors else ""),
                prop=PROGRESS,
            )
    return f"{rounds} rounds of {k} clients at once on {limit} permits: exactly {limit} won each time"


# --- a holder keeps its permit for its lease ------------------------------------------------------

#: Rounds of the hold check: back to back, over more than two seconds of the server's clock.
HOLD_ROUNDS = 16


def hold_check(ctx: CheckContext) -> str:
    """A holder keeps its permit for its whole lease: each round, one client takes the only permit
    and another tries every 10 ms until 0.7 of the lease has passed; a grant that returns within
    0.8 of it is a second holder. The rounds follow one another over more than two seconds, so
    every part of the server's second falls inside some holder's lease (Redis-Semaphore's clock
    misreads the first tenth of each: a live holder's grab looks stale there)."""
    ttl = ctx.ttl(MODEL_TTL) / 1000
    holder_client, other_client = ctx.client(), ctx.client()
    too_slow = 0
    for r in range(HOLD_ROUNDS):
        ctx.note(f"hold: round {r + 1} of {HOLD_ROUNDS}")
        key = ctx.namespace.key("hold", r)
        holder, other = (
            ctx.factory(holder_client, key, ctx.ttl(MODEL_TTL)),
            ctx.factory(other_client, key, ctx.ttl(MODEL_TTL)),
        )
        began = time.monotonic()  # its lease was written after this
        with expect(f"round {r + 1}: the holder acquires", prop=MUTUAL_EXCLUSION):
            if not granted(holder.acquire(blocking=False)):
                raise CheckFailed(f"round {r + 1}: an acquire of a free permit was refused", prop=PROGRESS)
        won = False
        while not won and time.monotonic() < began + 0.7 * ttl:
            with expect(f"round {r + 1}: another client tries", prop=MUTUAL_EXCLUSION):
                won = granted(other.acquire(blocking=False))
            after = time.monotonic() - began
            if won and after < 0.8 * ttl:
                raise CheckFailed(
                    f"round {r + 1}: another client acquired {after * 1000:.0f} ms after the holder "
                    f"did, while the holder's {ttl * 1000:g} ms lease was valid and it had not released",
                    prop=MUTUAL_EXCLUSION,
                )
            too_slow += won  # granted too late to tell: the holder's lease may have run out
            time.sleep(0.01)
        for lock in (holder, other) if won else (holder,):
            with contextlib.suppress(Exception):
                lock.release()
    late = f" ({too_slow} too late to tell: the machine is busy)" if too_slow else ""
    return f"{HOLD_ROUNDS} holders kept their permit for 0.7 of their {ttl * 1000:g} ms lease{late}"


# --- FIFO ---------------------------------------------------------------------------------------------


def fifo_check(ctx: CheckContext) -> str:
    """Six waiters queue one after another behind a holder; they must be granted in that order."""
    key, n = ctx.namespace.key("fifo"), 6
    holder = ctx.factory(ctx.client(), key, ctx.ttl(LONG_TTL))
    with expect("the holder acquires", prop=PROGRESS):
        holder.acquire(blocking=False)
    order: list[int] = []
    guard = threading.Lock()
    threads = []

    def wait_turn(i: int, lock: Any) -> None:
        if granted(lock.acquire(blocking=True, timeout=10)):
            with guard:
                order.append(i)
            time.sleep(0.01)
            with contextlib.suppress(Exception):
                lock.release()

    with own_clients() as extra:
        for i in range(n):
            client, trips = tapped_client(ctx, extra)
            lock = ctx.factory(client, key, ctx.ttl(LONG_TTL))
            t = threading.Thread(target=wait_turn, args=(i, lock), daemon=True)
            t.start()
            threads.append(t)
            deadline = time.monotonic() + 5
            while trips.sent < 2 and time.monotonic() < deadline:  # its first request has been answered
                time.sleep(0.001)
        with contextlib.suppress(Exception):
            holder.release()
        for t in threads:
            t.join(15)
    if order != list(range(n)):
        raise CheckFailed(f"{n} waiters queued in order 0..{n - 1} were granted in order {order}")
    return f"{n} queued waiters were granted in the order they asked"


SEMAPHORE_CHECKS: list[Check] = [
    *COMMON,
    Check(
        "model-n", "random operations on 3 permits against the semaphore model", semaphore_model_check,
        MUTUAL_EXCLUSION,
    ),
    Check(
        "limit-n", "16 clients at once on 3 permits: exactly 3 win", limit_check, MUTUAL_EXCLUSION,
        needs=MUTUAL_EXCLUSION,
    ),
    Check(
        "hold", "a holder keeps its permit for its lease", hold_check, MUTUAL_EXCLUSION,
        needs=MUTUAL_EXCLUSION,
    ),
    Check("fifo", "queued waiters granted in order", fifo_check, FIFO, needs=FIFO),
    LOCK_BAD_INPUT,
]  # fmt: skip
