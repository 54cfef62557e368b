"""The single-flight battery: the model, seed 001's scenario, and leaders that are slow, die or raise."""

from __future__ import annotations

import contextlib
import functools
import itertools
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from contend.check.bad_input import BAD_TTLS
from contend.check.burst import CallResult, burst, errors_summary
from contend.check.faults import own_clients, tapped_client
from contend.check.framework import Check, CheckContext, CheckFailed, expect_rejected
from contend.impl.catalog import BAD_INPUT, LEADER_FAILURE, RUNS_ONCE, SHARED_RESULT
from contend.models.base import Op
from contend.models.single_flight import FAILED, LEADER_FAILED, TIMEOUT, SingleFlightModel
from contend.servers.tap import SimulatedCrash


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


def _shared_results(outcomes: list[CallResult], what: str) -> None:
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
        raise CheckFailed(
            f"5 callers at once: the expensive API ran {calls.n} times, not once", prop=RUNS_ONCE
        )
    return "5 callers at once: the API ran once and all 5 got its result"


def leader_crash_check(ctx: CheckContext) -> str:
    """The leader computes, then its connection dies before it hands the result over: its waiters
    must get the result from a new leader, or an error, within a bound."""
    ttl = ctx.ttl(300)
    bound = 5.0 + 3 * ttl / 1000
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


#: The slow-leader check's lease (ms).
SLOW_LEADER_TTL = 1_000


def slow_leader_check(ctx: CheckContext) -> str:
    """The leader computes for three of its TTLs; callers arriving after the first TTL must wait for
    it and get its result, not start a second computation. (The TTL is long enough that a
    renewing leader's heartbeat is not late on a loaded machine.)"""
    ttl = ctx.ttl(SLOW_LEADER_TTL)
    key = ctx.namespace.key("slow")
    calls = _Calls()
    leader = ctx.factory(ctx.client(), key, ttl)
    late = [ctx.factory(ctx.client(), key, ttl) for _ in range(4)]
    started = threading.Event()
    got: list[CallResult] = []

    def slow() -> int:
        calls.add()
        started.set()
        time.sleep(3 * ttl / 1000)
        return 3

    def lead() -> None:
        try:
            got.append(CallResult(value=leader.call(slow)))
        except Exception as exc:
            got.append(CallResult(error=exc))

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


#: The hand-over check's lease (ms): far longer than it holds the leader.
HANDOVER_TTL = 5_000
#: Real seconds a held leader waits for its waiter to poll (a waiter told by a message, not by
#: polling, sends nothing meanwhile).
HANDOVER_HOLD = 1.0


def handover_check(ctx: CheckContext) -> str:
    """A caller that arrived while the function ran polls between every two round trips of the
    leader's hand-over (from the function's return to the end of its call), the leader alive and
    inside its lease: it must wait for the result, never run the function again."""
    ttl = ctx.ttl(HANDOVER_TTL)
    with own_clients() as extra:
        made = itertools.count()
        client, trips = tapped_client(ctx, extra)
        alone = ctx.factory(client, ctx.namespace.key("handover", next(made)), ttl)
        after: list[int] = []

        def compute() -> int:
            after.append(trips.sent)
            return 3

        alone.call(compute)
        steps = trips.sent - after[0]
        for k in range(steps):
            _handover(ctx, extra, ctx.namespace.key("handover", next(made)), k, steps, ttl)
    return (
        f"a caller that arrived while the function ran polled before each of the {steps} round trip(s) "
        "of the leader's hand-over: it waited for the result"
    )


def _handover(ctx: CheckContext, extra: list[Any], key: str, k: int, steps: int, ttl: int) -> None:
    calls = _Calls()
    computing, joined = threading.Event(), threading.Event()
    leader_client, leader_trips = tapped_client(ctx, extra)
    waiter_client, waiter_trips = tapped_client(ctx, extra)
    leader, waiter = ctx.factory(leader_client, key, ttl), ctx.factory(waiter_client, key, ttl)

    def lead() -> int:
        calls.add()
        computing.set()
        joined.wait(5)
        leader_trips.pause_after(k)  # held before round trip k + 1 of the hand-over
        return 3

    def again() -> int:
        calls.add()
        return 3

    leader_thread = threading.Thread(target=_swallow_call, args=(leader, lead), daemon=True)
    leader_thread.start()
    if not computing.wait(5):
        raise CheckFailed("the first caller never ran the function")
    waiter_thread = threading.Thread(target=_swallow_call, args=(waiter, again), daemon=True)
    waiter_thread.start()
    _until(lambda: waiter_trips.sent >= 1 or not waiter_thread.is_alive(), 5)
    joined.set()
    _until(lambda: leader_trips.paused.is_set() or not leader_thread.is_alive(), 5)
    polled = waiter_trips.sent
    # The waiter's next poll goes out and the one after it begins (so the first was answered),
    # or it ran the function, or it returned.
    _until(
        lambda: calls.n > 1 or waiter_trips.sent >= polled + 2 or not waiter_thread.is_alive(),
        HANDOVER_HOLD,
    )
    leader_trips.resume()
    leader_thread.join(10)
    waiter_thread.join(10)
    if calls.n > 1:
        raise CheckFailed(
            f"a caller arrived while the leader's function ran; the leader, alive and inside its {ttl} ms "
            f"lease, was held before round trip {k + 1} of the {steps} of its hand-over, and the caller "
            "then ran the function again instead of waiting for the result",
            prop=RUNS_ONCE,
        )


def _until(condition: Callable[[], bool], seconds: float) -> None:
    """Wait (polling every millisecond) until `condition()` holds or `seconds` pass."""
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.001)


def _swallow_call(flight: Any, fn: Callable[[], Any]) -> None:
    with contextlib.suppress(SimulatedCrash, Exception):
        flight.call(fn)


def leader_error_check(ctx: CheckContext) -> str:
    """The leader's function raises: each waiter must raise too (or lead a retry), never return nothing."""
    ttl = ctx.ttl(300)
    bound = 5.0 + 3 * ttl / 1000
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
    """ttl_ms <= 0 and an empty key raise (any exception) before anything is written."""
    client = ctx.client()
    cases = [*BAD_TTLS, ("empty key", "")]
    raised = set()
    for what, bad in cases:
        args = (client, bad, 1000) if what == "empty key" else (client, ctx.namespace.key("bad"), bad)
        raised.add(expect_rejected(ctx, what, lambda a: ctx.factory(*a).call(lambda: 1), args))
    return f"{len(cases)} bad arguments refused ({', '.join(sorted(raised))}), nothing written"


SINGLE_FLIGHT_CHECKS: list[Check] = [
    Check("model", "sequential calls against the single-flight model", flight_model_check, RUNS_ONCE),
    Check(
        "seed-001", "5 callers at once: the API runs once, all get its result", seed001_check, SHARED_RESULT,
        needs=SHARED_RESULT,
    ),
    Check(
        "slow-leader", "the leader outlives its TTL while computing", slow_leader_check, RUNS_ONCE,
        needs=RUNS_ONCE,
    ),
    Check(
        "handover", "a caller that arrived while the function ran polls inside the leader's hand-over",
        handover_check, RUNS_ONCE, needs=RUNS_ONCE,
    ),
    Check(
        "leader-crash", "the leader dies before handing over", leader_crash_check, LEADER_FAILURE,
        needs=LEADER_FAILURE,
    ),
    Check(
        "leader-error", "the leader's function raises", leader_error_check, LEADER_FAILURE,
        needs=LEADER_FAILURE,
    ),
    Check("bad-input", "ttl_ms <= 0 and an empty key refused, nothing written", flight_bad_input_check, BAD_INPUT),
]  # fmt: skip
