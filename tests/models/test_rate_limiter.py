"""models.rate_limiter: the envelope rejects what no correct limiter of the algorithm answers, and
nothing a correct one may answer (epoch-aligned or first-hit windows, refused hits counted or not)."""

from __future__ import annotations

import pytest

from contend.models.base import UNKNOWN, Op
from contend.models.rate_limiter import (
    FIXED_WINDOW,
    SLIDING_LOG,
    TOKEN_BUCKET,
    Hit,
    Limits,
    RateLimiterModel,
    over_admitted,
    refusal_rule,
    refused_with_room,
)

LIM = Limits(limit=2, window=1.0, slack=0.002)


def hits(*rows):
    """Hits from (began, ended, outcome[, cost]) rows, numbered in order."""
    return [Hit(i + 1, f"c{i}", r[3] if len(r) > 3 else 1, r[0], r[1], r[2]) for i, r in enumerate(rows)]


def test_three_admitted_at_once_break_every_algorithm():
    burst = hits((0.0, 0.01, True), (0.0, 0.01, True), (0.0, 0.01, True))
    for algorithm in (FIXED_WINDOW, SLIDING_LOG, TOKEN_BUCKET):
        assert over_admitted(burst, LIM, algorithm) is not None, algorithm


def test_a_fixed_window_may_admit_the_limit_on_each_side_of_an_epoch_edge():
    # The window from 0.0 holds two; an epoch-aligned edge at 1.0 (origin 0) lets two more in at 1.2.
    rows = hits((0.9, 0.91, True), (0.9, 0.91, True), (1.2, 1.21, True), (1.2, 1.21, True))
    assert over_admitted(rows, LIM, FIXED_WINDOW) is None
    # Without an edge between them (origin 0.5: edges at 0.5, 1.5), the same four are one window too many.
    assert over_admitted(rows, Limits(2, 1.0, 0.002, origin=0.5), FIXED_WINDOW) is not None
    # A sliding log never may.
    assert over_admitted(rows, LIM, SLIDING_LOG) is not None


def test_a_window_starts_anew_after_a_quiet_window():
    rows = hits((0.0, 0.01, True), (0.0, 0.01, True), (1.1, 1.11, True), (1.1, 1.11, True))
    for algorithm in (FIXED_WINDOW, SLIDING_LOG):
        assert over_admitted(rows, LIM, algorithm) is None, algorithm


def test_without_a_quiet_spell_a_first_hit_window_may_start_anywhere():
    # Hits keep coming, so nobody knows where the window starts: 2 at 0.5, 2 at 1.2 is allowed.
    rows = hits(
        (0.0, 0.01, False), (0.5, 0.51, True), (0.5, 0.51, True), (1.2, 1.21, True), (1.2, 1.21, True)
    )
    assert over_admitted(rows, Limits(2, 1.0, 0.002, origin=0.25), FIXED_WINDOW) is None


def test_a_bucket_admits_a_full_bucket_then_what_refills():
    full = hits((0.0, 0.01, True), (0.0, 0.01, True), (0.5, 0.51, True))  # one token back after 0.5 s
    assert over_admitted(full, LIM, TOKEN_BUCKET) is None
    assert over_admitted(full, LIM, SLIDING_LOG) is not None
    early = hits((0.0, 0.01, True), (0.0, 0.01, True), (0.2, 0.21, True))  # 0.4 of a token back
    assert over_admitted(early, LIM, TOKEN_BUCKET) is not None


def test_unknown_outcomes_never_count_as_admitted_but_count_against_a_refusal():
    rows = hits((0.0, 0.01, None), (0.0, 0.01, True), (0.0, 0.01, True), (0.1, 0.11, False))
    assert over_admitted(rows, LIM, SLIDING_LOG) is None
    assert refused_with_room(rows[-1], rows, LIM) is None


def test_a_refusal_with_room_is_false_and_one_after_busy_time_is_not():
    rows = hits((0.0, 0.01, True), (0.5, 0.51, False))
    assert "used 1 of 2" in refused_with_room(rows[-1], rows, LIM)
    busy = hits((0.0, 0.01, False), (0.0, 0.01, False), (0.5, 0.51, False))  # refused hits may count
    assert refused_with_room(busy[-1], busy, LIM) is None
    resent = [Hit(1, "c0", 1, 0.0, 0.01, True, weight=2), *hits((0.5, 0.51, False))[:0]]
    late = Hit(2, "c1", 1, 0.5, 0.51, False)
    assert refused_with_room(late, [*resent, late], LIM) is None  # the resend may have counted twice
    itself = Hit(2, "c0", 1, 0.5, 0.52, False, weight=2)  # its first try counted before the resend refused
    assert refused_with_room(itself, [Hit(1, "c0", 1, 0.0, 0.01, True), itself], LIM) is None
    after = hits((0.0, 0.01, True), (0.0, 0.01, True), (1.1, 1.11, False))
    assert refused_with_room(after[-1], after, LIM) is not None


def test_a_cost_above_the_limit_may_always_be_refused():
    big = Hit(1, "c0", 3, 0.0, 0.01, False)
    assert refused_with_room(big, [big], LIM) is None


def test_the_sequential_model_accepts_a_correct_run_and_rejects_an_extra_admission():
    model = RateLimiterModel(LIM, SLIDING_LOG)
    state = model.init()
    for began, output in ((0.0, True), (0.1, True), (0.2, False), (1.05, True), (1.2, UNKNOWN)):
        legal, state = model.step(state, Op("hit", (1, began, began + 0.01), output, None, "c0"))
        assert legal, (began, output)
    legal, _ = model.step(state, Op("hit", (1, 1.06, 1.07), True, None, "c0"))  # 0.1, 1.05 and this
    assert not legal
    assert "6 hits" in model.describe_state(_)
    with pytest.raises(ValueError, match="unknown rate-limiting algorithm"):
        RateLimiterModel(LIM, "leaky")


def test_a_bucket_refusal_counts_no_refused_hit_and_the_refill_since_the_bucket_was_full():
    """A token bucket (limit 2 per 1 s) takes nothing for a refused hit: two refusals do not stand
    in for the room a third hit had. Two admitted hits a moment ago leave no room; half a window
    later one token is back; a hit that may have been applied before it refused (a resend) took
    its token, and so did another refused hit's resend."""
    bucket = TOKEN_BUCKET
    refusals = hits((0.0, 0.01, False), (0.0, 0.01, False), (0.5, 0.51, False))
    assert "held at least 2.00" in refused_with_room(refusals[-1], refusals, LIM, bucket)
    assert refused_with_room(refusals[-1], refusals, LIM) is None  # the envelope: refused may count
    taken = hits((0.0, 0.01, True), (0.0, 0.01, True), (0.02, 0.03, False))
    assert refused_with_room(taken[-1], taken, LIM, bucket) is None
    later = hits((0.0, 0.01, True), (0.0, 0.01, True), (0.52, 0.53, False))
    assert "held at least 1.0" in refused_with_room(later[-1], later, LIM, bucket)
    one = hits((0.0, 0.01, True))
    alone = Hit(2, "c1", 1, 0.02, 0.03, False)
    assert refused_with_room(alone, [*one, alone], LIM, bucket) is not None  # 1 of 2 taken: room
    resent_itself = Hit(2, "c1", 1, 0.02, 0.03, False, weight=2)  # its first try took the last one
    assert refused_with_room(resent_itself, [*one, resent_itself], LIM, bucket) is None
    resend = Hit(2, "c1", 1, 0.02, 0.03, False, weight=2)  # refused, but its first try took a token
    third = Hit(3, "c2", 1, 0.04, 0.05, False)
    assert refused_with_room(third, [*one, resend, third], LIM, bucket) is None


def test_the_bucket_rule_is_for_a_limiter_that_claims_a_bucket_and_no_window():
    assert refusal_rule({TOKEN_BUCKET, "no-false-refusal"}) == TOKEN_BUCKET
    assert refusal_rule({TOKEN_BUCKET, FIXED_WINDOW}) == FIXED_WINDOW
    assert refusal_rule({SLIDING_LOG}) == FIXED_WINDOW
