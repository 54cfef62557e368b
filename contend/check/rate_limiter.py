"""The rate-limiter battery: hits one at a time against the model, a burst of clients on one key,
and bad input. Crashes, lost replies, stalls, windows running out and skewed clocks are the state
machine's (the `schedule` check), on the virtual clock the server keeps.

These real-time checks give the limiter a window of CHECK_WINDOW_MS (11.6 days): no window ends
and no bucket refills while they run, so what a correct limiter answers is known exactly. A
window aligned to the epoch could still end in the middle of one: the model allows for that edge
(a multiple of the window on the server's clock), so it costs no false alarm.

Each check is written once for synchronous limiters and for `redis.asyncio` ones (hit() a
coroutine): a `Crowd` (contend.check.burst) holds clients of the kind the limiter takes, runs
one client's calls to their end, and releases a burst's hits together (threads, or tasks on one
loop).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from typing import Any

from contend.check.burst import Crowd, awaited, crowd
from contend.check.framework import Check, CheckContext, CheckFailed, expect, expect_rejected
from contend.impl.catalog import (
    BAD_INPUT,
    BUCKET_HINT,
    FIXED_WINDOW,
    NO_FALSE_REFUSAL,
    OVER_ADMISSION_PROPERTIES,
    TOKEN_BUCKET,
)
from contend.models.rate_limiter import Hit, Limits, over_admitted, refusal_rule, refused_with_room

#: The window of the real-time checks (ms): nothing runs out while they run.
CHECK_WINDOW_MS = 1_000_000_000
#: The limit of the real-time checks.
CHECK_LIMIT = 5


def check_limits(ctx: CheckContext) -> Limits:
    """The checks' limits on the server's clock (seconds since the epoch), so an epoch-aligned
    window's edge falls where the model expects it."""
    seconds, micros = ctx.client().time()
    offset = seconds + micros / 1e6 - time.time()  # the server's clock minus ours
    return Limits(CHECK_LIMIT, CHECK_WINDOW_MS / 1000, slack=0.05, origin=-offset)


def _algorithms(ctx: CheckContext) -> list[str]:
    return sorted(OVER_ADMISSION_PROPERTIES & ctx.subject.claims)


def judge_hit(ctx: CheckContext, hits: list[Hit], lim: Limits, hit: Hit, what: str) -> None:
    """CheckFailed if `hit`, just ended, breaks a claimed bound or was refused with room."""
    if hit.outcome is True:
        for algorithm in _algorithms(ctx):
            if (evidence := over_admitted(hits, lim, algorithm, new=hit)) is not None:
                if algorithm == FIXED_WINDOW and TOKEN_BUCKET not in ctx.subject.claims:
                    evidence += BUCKET_HINT
                raise CheckFailed(f"{what}: {evidence}", prop=algorithm)
    elif (
        NO_FALSE_REFUSAL in ctx.subject.claims
        and (evidence := refused_with_room(hit, hits, lim, refusal_rule(ctx.subject.claims))) is not None
    ):
        raise CheckFailed(f"{what}: {evidence}", prop=NO_FALSE_REFUSAL)


def timed_hit(limiter: Any, cost: int, number: int, client: str) -> Hit:
    began = time.time()
    try:
        admitted = limiter.hit(cost)
    except Exception as exc:
        return Hit(number, client, cost, began, time.time(), None, error=type(exc).__name__)
    return Hit(number, client, cost, began, time.time(), bool(admitted))


async def _timed_hit_async(limiter: Any, cost: int, number: int, client: str) -> Hit:
    """`timed_hit` for a limiter whose hit() is a coroutine (code for redis.asyncio)."""
    began = time.time()
    try:
        admitted = await awaited(limiter.hit(cost))
    except Exception as exc:
        return Hit(number, client, cost, began, time.time(), None, error=type(exc).__name__)
    return Hit(number, client, cost, began, time.time(), bool(admitted))


def _hit_call(people: Crowd, limiter: Any, cost: int, number: int, client: str) -> Callable[[], Any]:
    """One timed hit as the crowd runs it: a coroutine for async code, a plain call otherwise."""
    timed = _timed_hit_async if people.asynchronous else timed_hit
    return functools.partial(timed, limiter, cost, number, client)


# --- one at a time -------------------------------------------------------------------------------


def limiter_model_check(ctx: CheckContext) -> str:
    """On fresh keys, one client: `limit` hits admitted, the next refused; hit(limit + 1) refused
    and hit(limit) admitted; remaining() (if it has one) counts down from `limit` to 0. Judged by
    models.rate_limiter, with no window running out. Async code is awaited on a loop of its own."""
    lim = check_limits(ctx)
    with crowd(ctx, 1) as people:
        client = people.clients[0]
        make = functools.partial(ctx.factory, client, limit=CHECK_LIMIT, window_ms=CHECK_WINDOW_MS)
        limiter = make(ctx.namespace.key("model", "a"))
        has_remaining = callable(getattr(limiter, "remaining", None))
        hits: list[Hit] = []
        counted = []
        for step in range(CHECK_LIMIT + 2):
            if has_remaining:
                with expect(f"remaining() before hit {step + 1}"):
                    left = people.call(limiter.remaining)
                want = max(0, CHECK_LIMIT - step)
                if left != want:
                    raise CheckFailed(
                        f"remaining() said {left!r} after {min(step, CHECK_LIMIT)} admitted hit(s) of {CHECK_LIMIT} "
                        f"(and {max(0, step - CHECK_LIMIT)} refused) on a fresh key: {want} left",
                        prop=NO_FALSE_REFUSAL
                        if isinstance(left, int) and left < want
                        else next(iter(_algorithms(ctx)), FIXED_WINDOW),
                    )
                counted.append(left)
            hit = people.call(_hit_call(people, limiter, 1, len(hits) + 1, "c0"))
            hits.append(hit)
            judge_hit(ctx, hits, lim, hit, f"hit {step + 1} of one client on a fresh key")
        big = make(ctx.namespace.key("model", "b"))
        over = people.call(_hit_call(people, big, CHECK_LIMIT + 1, 1, "c0"))
        if over.outcome is True:
            raise CheckFailed(
                f"hit({CHECK_LIMIT + 1}) on a fresh key was admitted, above the limit of {CHECK_LIMIT}",
                prop=_algorithms(ctx)[0] if _algorithms(ctx) else FIXED_WINDOW,
            )
        full = people.call(_hit_call(people, make(ctx.namespace.key("model", "c")), CHECK_LIMIT, 1, "c0"))
    judge_hit(ctx, [full], lim, full, f"hit({CHECK_LIMIT}) on a fresh key")
    admitted = sum(h.outcome is True for h in hits)
    text = f"{CHECK_LIMIT + 2} hits admitted {admitted}; hit({CHECK_LIMIT + 1}) refused, hit({CHECK_LIMIT}) admitted"
    return text + (f"; remaining() said {counted}" if has_remaining else "")


# --- many clients at once ------------------------------------------------------------------------


def limiter_burst_check(ctx: CheckContext) -> str:
    """3 × limit clients (tasks on one loop, for async code) hit one fresh key at the same instant,
    three times over: no more than the claimed algorithm allows is admitted (no window runs out
    meanwhile)."""
    lim = check_limits(ctx)
    key = ctx.namespace.key("burst")
    k = max(3 * CHECK_LIMIT, ctx.options.burst_clients)
    hits: list[Hit] = []
    with crowd(ctx, k) as people:
        limiters = [ctx.factory(client, key, CHECK_LIMIT, CHECK_WINDOW_MS) for client in people.clients]
        for round_ in range(3):
            ctx.note(f"burst: round {round_ + 1} of 3")
            calls = [
                _hit_call(people, limiter, 1, len(hits) + i + 1, f"c{i}")
                for i, limiter in enumerate(limiters)
            ]
            outcomes = people.at_once(calls, timeout=60)
            new = [o.value for o in outcomes if o.ok]
            hits.extend(new)
            for hit in sorted(new, key=lambda h: h.ended):
                if hit.outcome is True:
                    judge_hit(
                        ctx, hits, lim, hit, f"{k} {people.who} hitting one key at once, round {round_ + 1}"
                    )
        who = people.who
    admitted = sum(h.cost for h in hits if h.outcome is True)
    errors = sorted({h.error for h in hits if h.error})
    return f"{k} {who} × 3 rounds at once: {admitted} admitted of {CHECK_LIMIT} per window" + (
        f" (some raised: {', '.join(errors)})" if errors else ""
    )


# --- bad input -----------------------------------------------------------------------------------


def limiter_bad_input_check(ctx: CheckContext) -> str:
    """limit < 1, window_ms <= 0 and an empty key raise (any exception, from the factory or the
    first hit) before anything is written."""
    key = ctx.namespace.key("bad")
    cases: list[tuple[str, str, Any, Any]] = [
        ("limit 0", key, 0, 1000),
        ("limit -1", key, -1, 1000),
        ("window_ms 0", key, 5, 0),
        ("window_ms -1000", key, 5, -1000),
        ("an empty key", "", 5, 1000),
    ]
    raised = set()
    with crowd(ctx, 1) as people:
        for what, name, limit, window in cases:

            def attempt(name: str = name, limit: Any = limit, window: Any = window) -> Any:
                return people.call(lambda: ctx.factory(people.clients[0], name, limit, window).hit(1))

            raised.add(expect_rejected(ctx, what, attempt))
    return f"{len(cases)} bad arguments refused ({', '.join(sorted(raised))}), nothing written"


RATE_LIMITER_CHECKS: list[Check] = [
    Check(
        "model", "hits one at a time on fresh keys against the rate-limiter model (remaining() too)",
        limiter_model_check,
    ),
    Check("burst", "3 × limit clients hit one key at once, three rounds: no over-admission", limiter_burst_check),
    Check(
        "bad-input", "limit < 1, window_ms <= 0 and an empty key refused, nothing written",
        limiter_bad_input_check, BAD_INPUT,
    ),
]  # fmt: skip
