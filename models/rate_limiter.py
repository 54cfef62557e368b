"""A rate limiter: `hit(cost)` admits at most `limit` per `window` on one key, or refuses.

Correct limiters of one algorithm do not all answer alike (a fixed window may start at its first
hit or at a multiple of the window on the clock; refused hits may count or not; a token bucket
rounds its refill), so this specification is an envelope: it rejects only answers that no correct
limiter of the declared algorithm could give. Times are in one unit (seconds, as the scheduler's
clock), and a hit took effect at one instant between its `began` and its `ended`:

* over-admission, per algorithm:
  - `fixed-window`: after a quiet spell (no hit of any outcome under way for a whole window),
    every window starts at or after the first hit that follows it, so the hits admitted within a
    window of that first hit's start are in one window, or in two split by a multiple of the
    window on the clock (a window aligned to the epoch): at most `limit` on each side;
  - `sliding-log`: at most `limit` admitted among hits that all lie within less than a window;
  - `token-bucket` (GCRA too): at most `limit + d * limit / window` among hits that all lie
    within a span `d` (a bucket of `limit` tokens refilled at `limit` per window);
* false refusal: a hit refused (or raising) while every hit that could have counted against it
  (any outcome, any time in the window before it, resends counted as many times as they may have
  been applied) leaves room for its cost. Every algorithm has room back then: a fixed window that
  holds this hit started less than a window ago, a log counts the last window only, and a bucket
  holds at least `limit` minus what was taken in the last window. A limiter that claims a token
  bucket and no window is judged by the bucket's own rule (`refusal_rule`): a refused hit takes
  no token, and the refill since the bucket was last full counts.

`slack` widens every bound by the rounding a correct limiter may do (whole milliseconds, a float
emission interval). A hit whose outcome is unknown (its reply lost, its client crashed) is never
counted as admitted; it still counts against a refusal.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from contend.models.base import UNKNOWN, Op

FIXED_WINDOW = "fixed-window"
SLIDING_LOG = "sliding-log"
TOKEN_BUCKET = "token-bucket"
ALGORITHMS = (FIXED_WINDOW, SLIDING_LOG, TOKEN_BUCKET)


@dataclass(frozen=True)
class Hit:
    """One hit: who, how much, when (it took effect somewhere in [began, ended]) and what came of
    it: True admitted, False refused, None unknown. `weight` is how many times it may have been
    applied (a command resent after a lost reply); `error` names what it raised, if it did."""

    number: int
    client: str
    cost: int
    began: float
    ended: float
    outcome: bool | None
    weight: int = 1
    error: str = ""

    def describe(self) -> str:
        what = {True: "admitted", False: "refused", None: "unknown"}[self.outcome]
        if self.error:
            what = f"raised {self.error}"
        cost = f"({self.cost})" if self.cost != 1 else "()"
        return f"#{self.number} {self.client} hit{cost} {what} [{self.began:.3f}, {self.ended:.3f}]"


@dataclass(frozen=True)
class Limits:
    """The declared bound: `limit` per `window`, on a clock whose multiples of `window` (an epoch
    window's edges) fall at `origin + k * window`; `slack` is a correct limiter's rounding."""

    limit: int
    window: float
    slack: float = 0.002
    origin: float = 0.0


def over_admitted(hits: Sequence[Hit], limits: Limits, algorithm: str, new: Hit | None = None) -> str | None:
    """Evidence that the admitted hits break `algorithm`'s bound, or None. With `new`, only sets
    of hits that hold it are looked at (the others were judged before it came)."""
    admitted = sorted((h for h in hits if h.outcome is True), key=lambda h: (h.began, h.number))
    if algorithm == SLIDING_LOG:
        return _sliding(admitted, limits, new)
    if algorithm == TOKEN_BUCKET:
        return _bucket(admitted, limits, new)
    if algorithm == FIXED_WINDOW:
        return _fixed(hits, admitted, limits, new)
    raise ValueError(f"unknown rate-limiting algorithm {algorithm!r}; one of {', '.join(ALGORITHMS)}")


def _total(hits: Sequence[Hit]) -> int:
    return sum(h.cost for h in hits)


def _listing(hits: Sequence[Hit]) -> str:
    return "; ".join(h.describe() for h in hits)


def _holds(side: Sequence[Hit], new: Hit | None) -> bool:
    return new is None or any(h.number == new.number for h in side)


def _sliding(admitted: Sequence[Hit], lim: Limits, new: Hit | None) -> str | None:
    for first in admitted:
        inside = [
            h for h in admitted if h.began >= first.began and h.ended < first.began + lim.window - lim.slack
        ]
        if _total(inside) > lim.limit and _holds(inside, new):
            span = max(h.ended for h in inside) - first.began
            return (
                f"{_total(inside)} admitted within {span:.3f} s, less than one window of {lim.window:g} s "
                f"(limit {lim.limit}): {_listing(inside)}"
            )
    return None


def _bucket(admitted: Sequence[Hit], lim: Limits, new: Hit | None) -> str | None:
    ends = sorted({h.ended for h in admitted})
    for first in admitted:
        if new is not None and first.began > new.began:
            continue
        for end in ends:
            if end < first.began or (new is not None and end < new.ended):
                continue
            inside = [h for h in admitted if h.began >= first.began and h.ended <= end]
            span = end - first.began
            bound = lim.limit + (span + lim.slack) * lim.limit / lim.window
            if _total(inside) > math.floor(bound + 1e-9):
                return (
                    f"{_total(inside)} admitted within {span:.3f} s; a bucket of {lim.limit} refilled at "
                    f"{lim.limit} per {lim.window:g} s admits at most {math.floor(bound + 1e-9)} in that "
                    f"time: {_listing(inside)}"
                )
    return None


def quiet_before(hits: Sequence[Hit], at: float, lim: Limits, exclude: int | None = None) -> bool:
    """Was no hit of any outcome (other than number `exclude`) under way in the window before `at`?"""
    since = at - lim.window - lim.slack
    return not any(h.number != exclude and h.ended > since and h.began < at for h in hits)


def _fixed(hits: Sequence[Hit], admitted: Sequence[Hit], lim: Limits, new: Hit | None) -> str | None:
    for first in sorted(hits, key=lambda h: (h.began, h.number)):
        if new is not None and first.began > new.began:
            break
        if not quiet_before(hits, first.began, lim, exclude=first.number):
            continue
        start, end = first.began, first.began + lim.window - lim.slack
        inside = [h for h in admitted if h.began >= start and h.ended < end]
        edge = lim.origin + math.ceil((start - lim.origin) / lim.window) * lim.window
        if edge <= start or edge >= end:  # no epoch window's edge in between: one window
            sides = [("", inside)]
        else:  # an epoch-aligned window may end at `edge`: each side is one window
            sides = [
                ("before", [h for h in inside if h.ended < edge - lim.slack]),
                ("after", [h for h in inside if h.began >= edge + lim.slack]),
            ]
        for where, side in sides:
            if _total(side) > lim.limit and _holds(side, new):
                return (
                    f"{_total(side)} admitted in one window (limit {lim.limit}): no hit was under way for "
                    f"a whole {lim.window:g} s window before {first.describe()}, so every window opened "
                    f"since starts at or after it, and these all came within a window of it"
                    + (
                        f", {where} the edge of a window aligned to the epoch at {edge:.3f} s"
                        if where
                        else " (no edge of a window aligned to the epoch between them)"
                    )
                    + f": {_listing(side)}"
                )
    return None


def refusal_rule(claims: frozenset[str] | set[str]) -> str:
    """The false-refusal rule for a limiter claiming `claims` (catalog property names): the token
    bucket's when it claims a bucket and no window, else the envelope every algorithm meets."""
    if TOKEN_BUCKET in claims and not claims & {FIXED_WINDOW, SLIDING_LOG}:
        return TOKEN_BUCKET
    return FIXED_WINDOW


def refused_with_room(
    hit: Hit, hits: Sequence[Hit], lim: Limits, algorithm: str = FIXED_WINDOW
) -> str | None:
    """Evidence that `hit` (refused, or raising with no reply lost) was refused with room for it:
    by the bucket's own rule for `token-bucket` (`refusal_rule`), else by the envelope."""
    if algorithm == TOKEN_BUCKET:
        return _bucket_refused(hit, hits, lim)
    since = hit.began - lim.window - lim.slack
    counted = [h for h in hits if h.number != hit.number and h.ended > since and h.began < hit.ended]
    # The hit itself may have been applied before the try that answered (a command resent).
    used = sum(h.cost * h.weight for h in counted) + hit.cost * (hit.weight - 1)
    if hit.cost > lim.limit or used + hit.cost > lim.limit:
        return None
    what = f"raised {hit.error}" if hit.error else "was refused"
    return (
        f"{hit.describe()} {what}, yet hits that could count against it in the {lim.window:g} s before "
        f"it used {used} of {lim.limit}" + (f": {_listing(counted)}" if counted else " (there were none)")
    )


def _bucket_refused(hit: Hit, hits: Sequence[Hit], lim: Limits) -> str | None:
    """A token bucket (GCRA too) takes nothing for a refused hit, and a bucket of `limit` refilled
    at `limit` per window, full when the first hit came (a fresh key, as the history is whole),
    holds at any time at least what `_least_holding` says. A refusal is false when that least
    holding covers
    the hit's cost at every moment of the hit, counting every hit that may have taken from the
    bucket by then: admitted or of unknown outcome, as many times as it may have been applied,
    and refused ones (the hit itself too) once for each resend that may have been applied before
    the try that refused."""
    others = [h for h in hits if h.number != hit.number]
    takers = [h for h in others if h.outcome is not False]
    # A refused hit took nothing in the try that answered, but each resend before it may have:
    # other refused hits, and the hit itself.
    takers += [replace(h, weight=h.weight - 1) for h in others if h.outcome is False and h.weight > 1]
    if hit.weight > 1:
        takers.append(replace(hit, number=-hit.number, weight=hit.weight - 1))
    rate = lim.limit / lim.window
    moments = [hit.began, *sorted({h.began for h in takers if hit.began < h.began <= hit.ended})]
    start = min(h.began for h in [*hits, hit])
    least = min(_least_holding(t, takers, lim, rate, start) for t in moments)
    if least + 1e-9 < hit.cost:
        return None
    what = f"raised {hit.error}" if hit.error else "was refused"
    counted = [h for h in takers if h.began <= hit.ended and h.ended > hit.began - lim.window]
    return (
        f"{hit.describe()} {what}, yet a bucket of {lim.limit} refilled at {lim.limit} per {lim.window:g} s "
        f"held at least {least:.2f} at every moment of it, counting every hit that could have taken from "
        f"it (a refused hit takes nothing)" + (f": {_listing(counted)}" if counted else " (there were none)")
    )


def _least_holding(t: float, takers: Sequence[Hit], lim: Limits, rate: float, start: float) -> float:
    """The least a token bucket, full at `start` (the first hit on its fresh key), may hold at time
    t: for the last moment s it was full, `limit` plus the refill since s, less what hits that may
    have taken in (s, t] took; the least over s, which is `start`, t itself (hits under way at t
    may have taken just now) or the end of a hit that may have taken (the slack widens each
    refill by a correct bucket's rounding)."""

    def taken(since: float) -> int:
        return sum(h.cost * h.weight for h in takers if h.began <= t and h.ended >= since)

    least = float(lim.limit)
    for s in {start, t, *(h.ended for h in takers if start <= h.ended <= t)}:
        least = min(least, lim.limit + rate * (t - s + lim.slack) - taken(s))
    return least


@dataclass(frozen=True)
class RateLimiterState:
    """The hits so far, as the envelope judges them."""

    hits: tuple[Hit, ...] = field(default_factory=tuple)


class RateLimiterModel:
    """The envelope as a sequential model. An Op is `hit` with value (cost, began, ended) and output
    True, False or UNKNOWN; a step is legal unless the answer breaks the declared algorithm's bound
    or refuses with room."""

    def __init__(self, limits: Limits, algorithm: str = FIXED_WINDOW) -> None:
        if algorithm not in ALGORITHMS:
            raise ValueError(f"unknown rate-limiting algorithm {algorithm!r}; one of {', '.join(ALGORITHMS)}")
        self.limits = limits
        self.algorithm = algorithm
        self.name = f"rate-limiter ({algorithm}, {limits.limit} per {limits.window:g})"

    def init(self) -> RateLimiterState:
        return RateLimiterState()

    def step(self, state: RateLimiterState, op: Op) -> tuple[bool, RateLimiterState]:
        cost, began, ended = op.value
        outcome = None if op.output is UNKNOWN else bool(op.output)
        hit = Hit(len(state.hits) + 1, str(op.process), cost, began, ended, outcome)
        nxt = RateLimiterState((*state.hits, hit))
        if outcome is True:
            return over_admitted(nxt.hits, self.limits, self.algorithm) is None, nxt
        if outcome is False:
            rule = TOKEN_BUCKET if self.algorithm == TOKEN_BUCKET else FIXED_WINDOW
            return refused_with_room(hit, nxt.hits, self.limits, rule) is None, nxt
        return True, nxt

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return [list(ops)]

    def describe_state(self, state: RateLimiterState) -> str:
        admitted = sum(h.cost for h in state.hits if h.outcome)
        return f"{len(state.hits)} hits, {admitted} admitted in all"
