"""Lost replies in a rate limiter's hit, where they bite: on a fresh key, and with one unit of the
limit left.

On a fresh key, one client takes nothing, or all but one unit of the limit (`CHECK_LIMIT - 1`
hits, each admitted). Then, for each round trip in turn of a hit of another client, the server
runs that round trip and its reply is lost (the client sees a ConnectionError or a TimeoutError, as in
contend.check.lost_reply). What the hit then returns or raises is allowed, as long as:

* it is not refused while the limit still had room for it (no-false-refusal): its own lost
  round trip may have taken the last unit, so a retry of the code's own that finds the unit gone
  and refuses has reported a hit refused that the limiter counted (only redis-py's resends,
  `--client-retries`, may count it twice);
* a third client's hit then keeps within the claimed algorithm's bound;
* no key of the limiter's is left without an expiry (no-stuck-key): a counter created by the lost
  round trip, whose expiry was to come in the next one, would refuse every hit for ever.

The window is the real-time checks' (CHECK_WINDOW_MS, days): no unit comes back while it runs, so
what a correct limiter answers is known exactly, and judged by models.rate_limiter as the other
real-time checks are. Synchronous limiters only: an async one loses its replies in the state
machine (the schedule check).
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import redis

from contend.check.faults import own_clients, tapped_client
from contend.check.framework import Check, CheckContext, CheckFailed
from contend.check.lost_reply import count_round_trips, lost, resent
from contend.check.rate_limiter import CHECK_LIMIT, CHECK_WINDOW_MS, check_limits, judge_hit, timed_hit
from contend.impl.catalog import NO_FALSE_REFUSAL, NO_STUCK_KEY
from contend.models.rate_limiter import Hit, Limits


def limiter_lost_reply_check(ctx: CheckContext) -> str:
    """Each round trip of a hit loses its reply, one unit of the limit left (the module's docstring)."""
    lim = check_limits(ctx)
    with own_clients() as extra:
        made = itertools.count()

        def key() -> str:
            return ctx.namespace.key("lost", next(made))

        steps = count_round_trips(
            ctx,
            extra,
            lambda limiter: limiter.hit(1),
            lambda c: ctx.factory(c, key(), CHECK_LIMIT, CHECK_WINDOW_MS),
        )
        for taken in (0, CHECK_LIMIT - 1):
            for k in range(1, steps + 1):
                _lost_hit(ctx, extra, lim, key(), k, steps, taken)
    return (
        f"the reply to each of {steps} round trip(s) of a hit lost, on a fresh key and with one unit of "
        f"{CHECK_LIMIT} left: no false refusal, no over-admission, every key with an expiry"
    )


def _lost_hit(
    ctx: CheckContext, extra: list[redis.Redis], lim: Limits, key: str, k: int, steps: int, taken: int
) -> None:
    """`taken` hits of one client, then another's hit loses the reply to its round trip `k`."""
    setup = ctx.factory(ctx.client(), key, CHECK_LIMIT, CHECK_WINDOW_MS)
    hits: list[Hit] = []
    for _ in range(taken):
        hits.append(timed_hit(setup, 1, len(hits) + 1, "c0"))
        judge_hit(ctx, hits, lim, hits[-1], f"hit {len(hits)} of one client on a fresh key")
    client, trips = tapped_client(ctx, extra)
    limiter = ctx.factory(client, key, CHECK_LIMIT, CHECK_WINDOW_MS)
    trips.lose_after(k - 1, lost(k, steps))
    ctx.note(f"lost reply: round trip {k} of {steps} of a hit, {taken} of {CHECK_LIMIT} taken")
    hit = timed_hit(limiter, 1, len(hits) + 1, "c1")
    if not trips.lost:
        return
    # Its outcome is unknown when it raised; it may have been applied once per redis-py resend.
    hit = replace(hit, weight=1 + max(0, ctx.target.client_retries), error="")
    hits.append(hit)
    where = f"{taken} of {CHECK_LIMIT} units taken" if taken else "on a fresh key"
    what = f"{where}, the reply to round trip {k} of {steps} of a hit was lost{resent(trips)}"
    if hit.outcome is not None:  # raised: unknown, judged only through the hits after it
        judge_hit(ctx, hits, lim, hit, what)
    third = timed_hit(ctx.factory(ctx.client(), key, CHECK_LIMIT, CHECK_WINDOW_MS), 1, len(hits) + 1, "c2")
    hits.append(third)
    judge_hit(ctx, hits, lim, third, f"{what}; a third client's hit")
    if ctx.subject is not None and NO_STUCK_KEY in ctx.subject.claims:
        _no_stuck_key(ctx, key, what)


def _no_stuck_key(ctx: CheckContext, key: str, what: str) -> None:
    """CheckFailed(no-stuck-key) if a key of this limiter's (one whose name holds its key) has no
    expiry."""
    stuck = [raw.decode(errors="replace") for _, _, raw in ctx.namespace.without_expiry(containing=key)]
    if stuck:
        raise CheckFailed(f"{what}; then {', '.join(sorted(stuck))} had no expiry", prop=NO_STUCK_KEY)


LIMITER_LOST_REPLY = Check(
    "lost-reply",
    "each round trip's reply of a hit lost with one unit left: no false refusal, no key without an expiry",
    limiter_lost_reply_check,
    NO_FALSE_REFUSAL,
)
