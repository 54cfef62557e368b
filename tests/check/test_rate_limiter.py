"""The rate-limiter battery of `contend check`: correct limiters pass, known-bad ones are caught only
for what the catalog says they break, and limiters written in other styles get no false alarm."""

from __future__ import annotations

import dataclasses

import pytest

from contend.check.battery import run_battery
from contend.check.framework import CheckOptions
from contend.impl import catalog
from contend.subject.resolve import user_subject
from contend.subject.subject import catalog_subjects
from tests.check.test_battery import assert_matches_catalog

LIMITERS = catalog.family("rate_limiter")


def run(name: str, target, ns, checks=(), **options):
    (subject,) = catalog_subjects(["rate_limiter"], [name])
    sized = CheckOptions(**{"shrink": False, "schedule_examples": 20, **options})
    (row,) = run_battery(target, [subject], sized, ns, only_checks=checks)
    return row


def test_the_quick_checks_pass_correct_limiters_and_catch_an_unwatched_bucket(contend_target, ns):
    for name in ("fixed_window", "sliding_log", "gcra"):
        row = run(name, contend_target, ns, ["model", "burst", "bad-input"])
        assert row.verdict == "pass", {r.check: r.detail for r in row.results}
    row = run("unwatched_bucket", contend_target, ns, ["burst"])
    assert row.verdict == "caught" and {r.prop for r in row.failed} == {catalog.TOKEN_BUCKET}


def test_the_battery_knows_a_limiters_remaining(contend_target, ns):
    row = run("gcra", contend_target, ns, ["bad-input"])
    assert row.subject.capabilities.remaining and "remaining" in row.subject.capabilities.describe()


def test_limiters_in_other_styles_get_no_false_alarm_and_a_mutant_is_caught(contend_target, ns):
    options = CheckOptions(shrink=False, schedule_examples=30)
    bucket = user_subject(
        "tests.fixtures.foreign.watch_bucket:make",
        "rate_limiter",
        contend_target,
        claim=["token-bucket"],
        no_claim=["fixed-window"],
    )
    window = user_subject("tests.fixtures.foreign.hash_window:make", "rate_limiter", contend_target)
    for row in run_battery(contend_target, [bucket, window], options, ns):
        assert row.verdict == "pass", {r.check: r.detail for r in row.results if not r.passed}
    bad = user_subject(
        "tests.fixtures.foreign.retry_log:make", "rate_limiter", contend_target, claim=["sliding-log"]
    )
    hunted = CheckOptions(
        shrink=False, schedule_examples=200
    )  # a lost reply must land: `contend check`'s budget
    (row,) = run_battery(contend_target, [bad], hunted, ns, only_checks=["schedule"])
    assert {r.prop for r in row.failed} == {catalog.NO_FALSE_REFUSAL}


def test_a_token_bucket_held_to_a_fixed_window_is_told_so(contend_target, ns):
    """The default claim is a fixed window: a GCRA checked without saying it is a bucket fails for
    fixed-window (a full bucket admits the limit, then what refills, within one window)."""
    gcra = user_subject("contend.impl.rate_limiter.gcra:factory", "rate_limiter", contend_target)
    (row,) = run_battery(contend_target, [gcra], CheckOptions(shrink=False, schedule_examples=200), ns,
                         only_checks=["schedule"])  # fmt: skip
    assert {r.prop for r in row.failed} == {catalog.FIXED_WINDOW}
    assert "--claim token-bucket --no-claim fixed-window" in row.failed[0].detail


@pytest.mark.soak
@pytest.mark.parametrize("impl", [pytest.param(i, id=i.name) for i in LIMITERS])
def test_battery_verdict_matches_the_catalog(impl, contend_target, ns):
    assert_matches_catalog(run(impl.name, contend_target, ns), impl)


def test_a_hit_resent_by_the_clients_retries_is_no_false_refusal(contend_target, ns):
    """With --client-retries, a hit whose reply was lost is sent again and may count twice: the
    refusal that follows is no false refusal (fixed_window was failed for it at 300 examples)."""
    retrying = dataclasses.replace(contend_target, client_retries=3)
    row = run("fixed_window", retrying, ns, ["schedule"], schedule_examples=300)
    assert row.verdict == "pass", {r.check: r.detail for r in row.results}


def test_an_async_limiter_is_checked_and_an_async_read_then_write_is_caught(contend_target, ns):
    """Limiters for redis.asyncio (hit() a coroutine) get the battery: the real-time checks run on
    a loop of their own (a burst is tasks released together), the machine on async clients."""
    good = user_subject("tests.fixtures.async_foreign.counter_window:make", "rate_limiter", contend_target)
    assert good.asynchronous and good.capabilities.remaining
    options = CheckOptions(shrink=False, schedule_examples=30)
    (row,) = run_battery(contend_target, [good], options, ns)
    assert row.verdict == "pass", {r.check: r.detail for r in row.results if not r.passed}
    assert [r.check for r in row.results] == ["model", "burst", "bad-input", "schedule"]
    bad = user_subject(
        "tests.fixtures.async_foreign.get_then_incr_window:make", "rate_limiter", contend_target
    )
    (row,) = run_battery(contend_target, [bad], options, ns, only_checks=["burst", "schedule"])
    assert {r.check for r in row.failed} == {"burst", "schedule"}
    assert {r.prop for r in row.failed} == {catalog.FIXED_WINDOW}
    assert "tasks hitting one key at once" in next(r.detail for r in row.failed if r.check == "burst")


def test_a_limiter_reading_a_clock_imported_by_name_is_not_blamed_for_time_it_never_saw(contend_target, ns):
    """pyrate-limiter stamps hits with `from time import time_ns`, bound when it was imported: the
    gate binds it to the virtual clock too, so the windows the machine lets pass reach it (before,
    every hit after a quiet window was refused, reported as a false refusal)."""
    pytest.importorskip("pyrate_limiter")
    subject = user_subject(
        "contend.adapters.pyrate_limiter:factory",
        "rate_limiter",
        contend_target,
        claim=["sliding-log"],
        no_claim=["no-stuck-key", "clock-skew-safe"],
    )
    options = CheckOptions(shrink=False, schedule_examples=30)
    (row,) = run_battery(contend_target, [subject], options, ns, only_checks=["schedule"])
    assert catalog.NO_FALSE_REFUSAL not in {r.prop for r in row.failed}, [r.detail for r in row.failed]


def _foreign(module: str, target) -> object:
    from tests.fixtures.foreign import LIMITER_CLAIMS

    claim, no_claim = LIMITER_CLAIMS.get(module, ((), ()))
    return user_subject(
        f"tests.fixtures.foreign.{module}:make",
        "rate_limiter",
        target,
        claim=list(claim),
        no_claim=list(no_claim),
    )


@pytest.mark.parametrize("retries", [0, 3])
def test_the_lost_reply_check_passes_limiters_in_other_styles(contend_target, ns, retries):
    """Each round trip of a hit loses its reply, on a fresh key and with one unit left: correct
    limiters in other styles (and the catalog's three) pass, with and without redis-py's resends."""
    target = dataclasses.replace(contend_target, client_retries=retries)
    styles = ("watch_bucket", "hash_window", "list_log", "micros_gcra", "float_bucket", "exact_watch_bucket")
    subjects = [_foreign(m, target) for m in styles]
    subjects += catalog_subjects(["rate_limiter"], ["fixed_window", "sliding_log", "gcra"])
    for row in run_battery(target, subjects, CheckOptions(shrink=False), ns, only_checks=["lost-reply"]):
        assert row.verdict == "pass", {r.check: r.detail for r in row.results if not r.passed}


@pytest.mark.parametrize(
    ("module", "prop"),
    [
        ("transaction_bucket", catalog.NO_FALSE_REFUSAL),
        ("retry_log", catalog.NO_FALSE_REFUSAL),
    ],
)
def test_the_lost_reply_check_catches_a_retry_that_refuses_the_unit_it_took(contend_target, ns, module, prop):
    """transaction_bucket's EXEC ran and its reply was lost: redis-py's transaction() retried and
    found the last unit gone; retry_log resends its script: both refuse a hit the limiter counted."""
    (row,) = run_battery(
        contend_target,
        [_foreign(module, contend_target)],
        CheckOptions(shrink=False),
        ns,
        only_checks=["lost-reply"],
    )
    assert {r.prop for r in row.failed} == {prop}
    assert "1 of 5" not in row.failed[0].detail and "4 of 5 units taken" in row.failed[0].detail


def test_the_lost_reply_check_catches_a_counter_left_without_an_expiry(contend_target, ns):
    row = run("incr_then_expire", contend_target, ns, ["lost-reply"])
    assert {r.prop for r in row.failed} == {catalog.NO_STUCK_KEY}
    assert "on a fresh key" in row.failed[0].detail and "had no expiry" in row.failed[0].detail
