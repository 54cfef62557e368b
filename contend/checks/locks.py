"""The lock batteries: locks, semaphores and single-flight, each against its model, its seed and faults.

Every check drives an implementation only through its protocol factory
(`factory(client, key, ttl_ms)`), each client on a connection of its own.
Faults are real: time passes (short TTLs, real sleeps), a client "crashes"
by having its connection refuse the next round trip (`SimulatedCrash`), a
clock is skewed through the factory's `clock` argument. Checks whose fault
needs a capability the implementation lacks (a clock to skew) or a property
it does not claim (fencing, FIFO) do not run for it: the table cell is empty.
"""

from __future__ import annotations

import collections
import contextlib
import functools
import inspect
import itertools
import random
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import redis

from contend.burst import Outcome, burst, errors_summary
from contend.checks import Check, CheckContext, CheckFailed, expect, expect_rejected
from impl.catalog import (
    CLOCK_SKEW_SAFE,
    CRASH_LIVENESS,
    FENCING,
    FIFO,
    LEADER_FAILURE,
    MUTUAL_EXCLUSION,
    RUNS_ONCE,
    SAFE_RELEASE,
    SHARED_RESULT,
)
from impl.connection import glob_escape
from impl.locks.fenced import FencedResource
from models.base import UNKNOWN, Op
from models.lease import LeaseModel
from models.semaphore import SemaphoreModel
from models.single_flight import FAILED, LEADER_FAILED, TIMEOUT, SingleFlightModel

#: Lease lengths (ms). Short, so expiry is a real event that costs little time.
MODEL_TTL = 250
FAULT_TTL = 200
LONG_TTL = 5_000


@dataclass(frozen=True)
class LockCheck(Check):
    """A check that runs only for implementations it applies to."""

    needs: str = ""  # a property the implementation must claim ("" : every implementation)
    needs_clock: bool = False  # the factory must take an injectable `clock`

    def applies(self, claims: frozenset[str], factory: Callable[..., Any]) -> bool:
        """Should this check run for an implementation claiming `claims`, built by `factory`?"""
        if self.needs and self.needs not in claims:
            return False
        return not self.needs_clock or takes_clock(factory)


def takes_clock(factory: Callable[..., Any]) -> bool:
    """Does the factory take an injectable `clock` (a client-clock algorithm)?"""
    try:
        return "clock" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


# --- fault injection ---------------------------------------------------------------------------


class SimulatedCrash(BaseException):
    """The client died here. A BaseException, so no lock code catches it and carries on."""


class RoundTrips:
    """Counts a client's round trips (one packed send each) and can crash it after a budget."""

    def __init__(self) -> None:
        self.sent = 0
        self.budget: int | None = None
        self._lock = threading.Lock()

    def spend(self) -> None:
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


def tap(client: redis.Redis) -> RoundTrips:
    """Count (and make crashable) every round trip of `client`'s future connections."""
    trips = RoundTrips()
    pool = client.connection_pool
    base = pool.connection_class

    def send_packed_command(self: Any, command: Any, check_health: bool = True) -> None:
        trips.spend()
        base.send_packed_command(self, command, check_health)

    pool.connection_class = type(
        f"Tapped{base.__name__}", (base,), {"send_packed_command": send_packed_command}
    )
    return trips


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
    for raw in sorted(client.scan_iter(match=glob_escape(key) + "*", count=1000)):
        name = "<key>" + raw.decode(errors="replace")[len(key) :]
        pttl = client.pttl(raw)
        parts.append(f"{name} ({'no TTL' if pttl == -1 else f'pttl {pttl} ms'})")
    return ", ".join(parts) or "no keys"


# --- the lease model, step by step ----------------------------------------------------------------


class _Inconclusive(Exception):
    """A lease may have run out on its own (the machine stalled): run the sequence again."""


def _up_to_three_runs(ctx: CheckContext, sequence: Callable[[CheckContext, int, int], str]) -> str:
    """Run a model sequence again (on fresh keys) when a stall made its outcome inconclusive."""
    n = min(ctx.options.model_ops, 150)
    for attempt in range(3):
        try:
            return sequence(ctx, n, attempt)
        except _Inconclusive:
            continue
    raise CheckFailed(f"{n} operations: three runs stalled past a lease's TTL; the machine is too loaded")


def model_check(ctx: CheckContext) -> str:
    """Random acquire/release/extend by 3 clients and expiry events, each compared with models.lease."""
    return _up_to_three_runs(ctx, _lease_sequence)


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
                raise _Inconclusive
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


def semaphore_model_check(ctx: CheckContext) -> str:
    """Random acquire/release by 5 clients on a semaphore of 3, with expiries, against models.semaphore."""
    return _up_to_three_runs(ctx, _semaphore_sequence)


def _semaphore_sequence(ctx: CheckContext, n: int, attempt: int) -> str:
    rng = random.Random(ctx.options.seed)
    key = ctx.namespace.key("model-n", attempt)
    limit = 3
    procs = [f"p{i}" for i in range(5)]
    clients = {p: ctx.client() for p in procs}
    fair = bool(getattr(ctx.factory(clients["p0"], key, MODEL_TTL, limit=limit), "fair", False))
    model = SemaphoreModel(limit, fair=fair)
    state = model.init()
    held: dict[str, Any] = {}
    renewed: dict[str, float] = {}
    recent: collections.deque[str] = collections.deque(maxlen=8)
    expiries = sorted(rng.sample(range(5, n), 3))
    expired = 0
    for step in range(n):
        if expiries and step >= expiries[0] and state.holders:
            expiries.pop(0)
            time.sleep(MODEL_TTL / 1000 + 0.05)
            for q in sorted(map(str, state.holders)):
                _, state = model.apply(state, "expire", q)
            renewed.clear()
            recent.append("expire all")
            expired += 1
            continue
        p = rng.choice(procs)
        # One object is one permit, so a client holding one would take a second: the model's
        # processes hold at most one, so a holder only releases.
        f = "acquire" if rng.random() < 0.55 and p not in state.holders else "release"
        output: Any
        with expect(f"op {step}: {p} {f}"):
            if f == "acquire":
                lock = ctx.factory(clients[p], key, MODEL_TTL, limit=limit)
                output = bool(lock.acquire(blocking=False))
            else:
                lock = held.pop(p, None) or ctx.factory(clients[p], key, MODEL_TTL, limit=limit)
                try:
                    lock.release()
                    output = "ok"
                except Exception:
                    output = "not-owner"
        done = time.monotonic()
        expected, _ = model.apply(state, f, None, p)
        if f == "release" and output == "ok" and expected != "ok":
            output = UNKNOWN
        recent.append(f"{p} {f} → {output!r}")
        legal, nxt = model.step(state, Op(f, None, output, key, p))
        if not legal:
            if any(done - renewed.get(str(h), done) > MODEL_TTL * 0.7 / 1000 for h in state.holders):
                raise _Inconclusive
            raise CheckFailed(
                f"op {step}: {p} {f} returned {output!r}; the model says {expected!r} "
                f"(state: {model.describe_state(state)}; last ops: {'; '.join(recent)})"
            )
        if f == "acquire" and output is True:
            held[p] = lock
            renewed[p] = done
        state = nxt
    return f"{n} operations by 5 clients on {limit} permits with {expired} expiries agree with the {model.name} model"


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


def limit_check(ctx: CheckContext) -> str:
    """Clients released together on a semaphore of 3: exactly 3 win, round after round."""
    k, rounds, limit = ctx.options.burst_clients, max(1, ctx.options.burst_rounds // 4), 3
    clients = [ctx.client() for _ in range(k)]
    for r in range(rounds):
        key = ctx.namespace.key("limit", r)
        sems = [ctx.factory(c, key, LONG_TTL, limit=limit) for c in clients]
        outcomes = burst([functools.partial(s.acquire, blocking=False) for s in sems])
        if failed := errors_summary(outcomes):
            raise CheckFailed(f"round {r + 1}: {failed}")
        winners = [s for s, o in zip(sems, outcomes, strict=True) if o.value]
        if len(winners) != limit:
            raise CheckFailed(f"round {r + 1}: {k} clients at once on {limit} permits: {len(winners)} won")
        for s in winners:
            s.release()
    return f"{rounds} rounds of {k} clients at once on {limit} permits: exactly {limit} won each time"


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


# --- FIFO ---------------------------------------------------------------------------------------------


def fifo_check(ctx: CheckContext) -> str:
    """Six waiters queue one after another behind a holder; they must be granted in that order."""
    key, n = ctx.namespace.key("fifo"), 6
    holder = ctx.factory(ctx.client(), key, LONG_TTL)
    with expect("the holder acquires"):
        holder.acquire(blocking=False)
    order: list[int] = []
    guard = threading.Lock()
    threads = []

    def wait_turn(i: int, lock: Any) -> None:
        if lock.acquire(blocking=True, timeout=10):
            with guard:
                order.append(i)
            time.sleep(0.01)
            lock.release()

    with own_clients() as extra:
        for i in range(n):
            client, trips = tapped_client(ctx, extra)
            lock = ctx.factory(client, key, LONG_TTL)
            t = threading.Thread(target=wait_turn, args=(i, lock), daemon=True)
            t.start()
            threads.append(t)
            deadline = time.monotonic() + 5
            while trips.sent < 2 and time.monotonic() < deadline:  # its first request has been answered
                time.sleep(0.001)
        holder.release()
        for t in threads:
            t.join(15)
    if order != list(range(n)):
        raise CheckFailed(f"{n} waiters queued in order 0..{n - 1} were granted in order {order}")
    return f"{n} queued waiters were granted in the order they asked"


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


# --- single-flight ------------------------------------------------------------------------------------


class _Calls:
    """Counts runs of the expensive function, thread-safely."""

    def __init__(self) -> None:
        self.n = 0
        self._lock = threading.Lock()

    def add(self) -> int:
        with self._lock:
            self.n += 1
            return self.n


def _api(calls: _Calls, seconds: float = 0.2) -> Callable[[], int]:
    """Seed 001's API: sums [1, 2] in `seconds`, costing one call each time."""

    def call() -> int:
        calls.add()
        time.sleep(seconds)
        return sum([1, 2])

    return call


def _shared_results(outcomes: list[Outcome], what: str) -> None:
    if failed := errors_summary(outcomes):
        raise CheckFailed(f"{what}: {failed}")
    got = [o.value for o in outcomes]
    if any(v != 3 for v in got):
        missing = sum(v != 3 for v in got)
        raise CheckFailed(f"{what}: {missing} of {len(got)} callers got {got} instead of the result 3")


def seed001_check(ctx: CheckContext) -> str:
    """Seed 001's scenario: 5 callers at once, each its own process and client; the API runs once,
    all 5 get its result."""
    key = ctx.namespace.key("api", "sum-1-2")
    calls = _Calls()
    flights = [ctx.factory(ctx.client(), key, 2_000) for _ in range(5)]
    outcomes = burst([functools.partial(f.call, _api(calls)) for f in flights], timeout=30)
    _shared_results(outcomes, "5 callers at once")
    if calls.n != 1:
        raise CheckFailed(f"5 callers at once: the expensive API ran {calls.n} times, not once")
    return "5 callers at once: the API ran once and all 5 got its result"


def leader_crash_check(ctx: CheckContext) -> str:
    """The leader computes, then its connection dies before it hands the result over: its waiters
    must get the result from a new leader, or an error, within a bound."""
    ttl, bound = 300, 5.0
    key = ctx.namespace.key("crash")
    calls = _Calls()
    computed = threading.Event()
    with own_clients() as extra:
        client, trips = tapped_client(ctx, extra)
        leader = ctx.factory(client, key, ttl)

        def dies() -> int:
            calls.add()
            trips.crash_after(0)
            computed.set()
            return 3

        thread = threading.Thread(target=_swallow_call, args=(leader, dies), daemon=True)
        thread.start()
        if not computed.wait(5):
            raise CheckFailed("the first caller never ran the function")
        waiters = [ctx.factory(ctx.client(), key, ttl) for _ in range(4)]
        try:
            outcomes = burst([functools.partial(w.call, _api(calls, 0.05)) for w in waiters], timeout=bound)
        except TimeoutError:
            raise CheckFailed(f"the leader died: its waiters still waited after {bound} s") from None
        thread.join(1)
    for o in outcomes:
        if o.ok and o.value != 3:
            raise CheckFailed(
                f"the leader died before handing its result over: waiters got {[x.value for x in outcomes]} "
                "with no error"
            )
    errors = sum(not o.ok for o in outcomes)
    return f"the leader died: its 4 waiters got the result ({calls.n - 1} recomputation(s)) or an error ({errors})"


def slow_leader_check(ctx: CheckContext) -> str:
    """The leader computes for three of its TTLs; callers arriving after the first TTL must wait for
    it and get its result, not start a second computation."""
    ttl = FAULT_TTL
    key = ctx.namespace.key("slow")
    calls = _Calls()
    leader = ctx.factory(ctx.client(), key, ttl)
    late = [ctx.factory(ctx.client(), key, ttl) for _ in range(4)]
    started = threading.Event()
    got: list[Outcome] = []

    def slow() -> int:
        calls.add()
        started.set()
        time.sleep(3 * ttl / 1000)
        return 3

    def lead() -> None:
        try:
            got.append(Outcome(value=leader.call(slow)))
        except Exception as exc:
            got.append(Outcome(error=exc))

    thread = threading.Thread(target=lead, daemon=True)
    thread.start()
    if not started.wait(5):
        raise CheckFailed("the first caller never ran the function")
    time.sleep(1.5 * ttl / 1000)
    outcomes = burst([functools.partial(f.call, _api(calls, 3 * ttl / 1000)) for f in late], timeout=10)
    thread.join(5)
    if calls.n != 1:
        raise CheckFailed(
            f"a leader slower than its {ttl} ms TTL: callers arriving after the TTL ran the function "
            f"again ({calls.n} runs in all)"
        )
    _shared_results(got + outcomes, f"a leader slower than its {ttl} ms TTL")
    return f"a leader computing for {3 * ttl} ms kept its {ttl} ms lease: one run, 5 callers got its result"


def _swallow_call(flight: Any, fn: Callable[[], Any]) -> None:
    with contextlib.suppress(SimulatedCrash, Exception):
        flight.call(fn)


def leader_error_check(ctx: CheckContext) -> str:
    """The leader's function raises: each waiter must raise too (or lead a retry), never return nothing."""
    ttl, bound = 300, 5.0
    key = ctx.namespace.key("error")
    started = threading.Event()
    leader = ctx.factory(ctx.client(), key, ttl)
    leader_error: list[BaseException] = []

    def fails() -> int:
        started.set()
        time.sleep(0.2)
        raise ValueError("the API answered 500")

    def lead() -> None:
        try:
            leader.call(fails)
        except Exception as exc:
            leader_error.append(exc)

    thread = threading.Thread(target=lead, daemon=True)
    thread.start()
    if not started.wait(5):
        raise CheckFailed("the first caller never ran the function")
    retries = _Calls()
    waiters = [ctx.factory(ctx.client(), key, ttl) for _ in range(4)]

    def retry() -> str:
        retries.add()
        return "retried"

    try:
        outcomes = burst([functools.partial(w.call, retry) for w in waiters], timeout=bound)
    except TimeoutError:
        raise CheckFailed(f"the leader raised: its waiters still waited after {bound} s") from None
    thread.join(5)
    if not leader_error:
        raise CheckFailed("the leader's own call did not raise its function's error")
    silent = [o.value for o in outcomes if o.ok and o.value != "retried"]
    if silent:
        raise CheckFailed(
            f"the leader raised ValueError: {len(silent)} of 4 waiters returned {silent} with no error"
        )
    errors = [type(o.error).__name__ for o in outcomes if o.error is not None]
    return f"the leader raised: waiters raised {sorted(set(errors)) or 'nothing'}, {retries.n} retried"


def flight_model_check(ctx: CheckContext) -> str:
    """Sequential calls by 3 clients on 3 keys, a third of the computations raising, against models.single_flight."""
    rng = random.Random(ctx.options.seed)
    n = min(ctx.options.model_ops, 40)
    procs = [f"p{i}" for i in range(3)]
    flights = {}
    for p in procs:
        client = ctx.client()
        for k in range(3):
            flights[p, k] = ctx.factory(client, ctx.namespace.key("flight", k), 250)
    model = SingleFlightModel()
    states = {k: model.init() for k in range(3)}
    for step in range(n):
        p, k = rng.choice(procs), rng.randrange(3)
        state = states[k]
        value = f"{p}-{step}"
        fail = rng.random() < 0.33
        ran: list[Any] = []

        def compute(value: str = value, fail: bool = fail, ran: list[Any] = ran) -> str:
            ran.append(FAILED if fail else value)
            if fail:
                raise ValueError("computation failed")
            return value

        try:
            result = flights[p, k].call(compute)
            output: Any = (result, "leader" if ran else "waiter")
        except Exception as exc:
            output = TIMEOUT if "Timeout" in type(exc).__name__ else LEADER_FAILED
        for computed in ran:
            legal, state = model.step(state, Op("compute", computed, "ok", k, p))
            if not legal:
                raise CheckFailed(f"op {step}: {p} computed key {k} while a flight was in progress")
        expected, _ = model.apply(state, "call", None, p)
        legal, state = model.step(state, Op("call", None, output, k, p))
        if not legal:
            raise CheckFailed(
                f"op {step}: {p} call(key {k}) returned {output!r}; the model says {expected!r} "
                f"({model.describe_state(states[k])})"
            )
        states[k] = state
    return f"{n} calls by 3 clients on 3 keys agree with the single-flight model"


def flight_bad_input_check(ctx: CheckContext) -> str:
    """TTL <= 0, missing or not whole ms, and an empty key: ValueError, nothing written."""
    client = ctx.client()
    cases = [*BAD_TTLS, ("empty key", "")]
    for what, bad in cases:
        args = (client, bad, 1000) if what == "empty key" else (client, ctx.namespace.key("bad"), bad)
        expect_rejected(ctx, what, lambda a: ctx.factory(*a).call(lambda: 1), args)
    return f"{len(cases)} bad arguments: ValueError each, nothing written"


# --- the batteries ------------------------------------------------------------------------------------

_COMMON = [
    LockCheck("model", "random operations and expiries against the lease model", model_check),
    LockCheck("seed-002", "8 clients × 25 locked increments: exactly 200", seed002_check, MUTUAL_EXCLUSION),
    LockCheck("burst", "16 clients at once, on a free and on an expired lock", burst_check, MUTUAL_EXCLUSION),
    LockCheck("expiry", "a late release after expiry leaves the successor alone", expiry_check, SAFE_RELEASE),
    LockCheck("crash", "a holder crashed at every round trip; others get in", crash_check, CRASH_LIVENESS),
]

LOCK_CHECKS: list[Check] = [
    *_COMMON,
    LockCheck("fencing", "growing tokens; a paused holder's late write refused", fencing_check, FENCING),
    LockCheck("skew", "a client whose clock runs ahead", skew_check, CLOCK_SKEW_SAFE, needs_clock=True),
    LockCheck("bad-input", "bad TTLs and keys: ValueError; release without acquire raises", bad_input_check),
]

SEMAPHORE_CHECKS: list[Check] = [
    *_COMMON,
    LockCheck("model-n", "random operations on 3 permits against the semaphore model", semaphore_model_check),
    LockCheck("limit-n", "16 clients at once on 3 permits: exactly 3 win", limit_check, MUTUAL_EXCLUSION),
    LockCheck("fifo", "queued waiters granted in order", fifo_check, FIFO),
    LockCheck("bad-input", "bad TTLs and keys: ValueError; release without acquire raises", bad_input_check),
]

SINGLE_FLIGHT_CHECKS: list[Check] = [
    LockCheck("model", "sequential calls against the single-flight model", flight_model_check),
    LockCheck(
        "seed-001", "5 callers at once: the API runs once, all get its result", seed001_check, SHARED_RESULT
    ),
    LockCheck("slow-leader", "the leader outlives its TTL while computing", slow_leader_check, RUNS_ONCE),
    LockCheck("leader-crash", "the leader dies before handing over", leader_crash_check, LEADER_FAILURE),
    LockCheck("leader-error", "the leader's function raises", leader_error_check, LEADER_FAILURE),
    LockCheck("bad-input", "bad TTLs and keys: ValueError", flight_bad_input_check),
]
