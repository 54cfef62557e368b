"""contend.machines.operations and .sequential: a user's own primitive judged against its
sequential specification (the model, or the implementation re-run one operation at a time).
Correct primitives in three styles pass, each known-bad twin is caught, and the judgements on
schedules forced by hand: the race itself, a lost reply and a crash (unknown outcomes, no false
alarm), a Redis error, and results a re-run cannot reproduce (not judged)."""

from __future__ import annotations

import pytest

from contend.history.checker import check_history
from contend.history.records import Record
from contend.history.verdict import Linearizability
from contend.impl.catalog import LINEARIZABLE, NO_SPURIOUS_ERRORS
from contend.machines.hunt import run_once
from contend.machines.operations import STALL_SECONDS, machine_for
from contend.machines.sequential import ModelSpec, Outcome, ReRunSpec, SpecModel
from contend.schedule.gating import LostReply
from contend.subject.resolve import user_subject

FIXTURES = "tests.fixtures.operations"
CORRECT = ["stock_script", "idempotency_watch", "seat_plain"]
TWINS = ["stock_get_then_decr", "idempotency_check_then_set"]
#: The async twins of the worked examples (redis.asyncio), correct and known-bad.
ASYNC_CORRECT = ["stock_async_watch", "idempotency_async_script"]
ASYNC_TWINS = ["stock_async_decr_then_refund", "idempotency_async_multi_unwatched"]


def machine(target, module: str, factory: str = "make", **options):
    subject = user_subject(f"{FIXTURES}.{module}:{factory}", "operations", target, **options)
    return machine_for(subject)


@pytest.mark.parametrize("module", CORRECT)
def test_a_correct_primitive_is_linearizable_against_its_re_run(module, contend_target):
    _, violation, _ = run_once(
        machine(contend_target, module), contend_target, seed=1, max_examples=60, shrink=False
    )
    assert violation is None, violation


def test_a_correct_primitive_is_linearizable_against_its_model(contend_target, monkeypatch):
    import tests.fixtures.operations.stock_script as stock

    monkeypatch.setattr(stock, "MODEL", stock.StockModel, raising=False)
    made = machine(contend_target, "stock_script")
    assert made.operations.model is stock.StockModel
    _, violation, _ = run_once(made, contend_target, seed=1, max_examples=60, shrink=False)
    assert violation is None, violation


@pytest.mark.parametrize("module", [*TWINS, *ASYNC_TWINS])
def test_a_known_bad_twin_is_caught(module, contend_target):
    _, violation, _ = run_once(
        machine(contend_target, module), contend_target, seed=0, max_examples=400, shrink=False
    )
    assert violation is not None, f"{module} was not caught"
    assert violation.property == LINEARIZABLE, violation


def _forced(target, module: str, **options):
    """A machine of `module` to drive by hand (teardown only cleans up)."""
    return machine(target, module, **options)(target)


def _run(made, index: int) -> None:
    while index in made.scheduler.runnable():
        made.step_client(index)


def _take_turns(made, clients=(0, 1)) -> None:
    """Step `clients` a round trip each in turn until none can run."""
    while made.scheduler.runnable():
        for index in clients:
            if index in made.scheduler.runnable():
                made.step_client(index)


def _judged(made, caught: bool, *evidence: str) -> None:
    """The example's end: a linearizability violation naming `evidence` if `caught`, else none."""
    if caught:
        with pytest.raises(Exception):  # noqa: B017 (outside a Hypothesis test, its note() raises too)
            made.check_quiescent()
        assert made.violation.property == LINEARIZABLE
        assert all(text in made.violation.detail for text in evidence), made.violation.detail
    else:
        made.check_quiescent()
        assert not made.failed


@pytest.mark.parametrize(("module", "caught"), [("stock_get_then_decr", True), ("stock_script", False)])
def test_two_reservations_that_read_before_either_writes(module, caught, contend_target):
    """Stock 3; c0 and c1 each reserve 2, their round trips taking turns: the twin reads 3 twice and
    both get theirs (the stock goes to -1); the script's reservations are one round trip each."""
    made = _forced(contend_target, module)
    try:
        made.call(0, "restock", (3,))
        _run(made, 0)
        made.call(0, "reserve", (2,))
        made.call(1, "reserve", (2,))
        _take_turns(made)
        made.call(2, "stock", ())
        _run(made, 2)
        _judged(made, caught, "reserve(2) returned True", "gives False")
    finally:
        made.failed = True
        made.teardown()


@pytest.mark.parametrize("model", [None, "tests.fixtures.operations.stock_script:StockModel"])
def test_a_lost_reply_leaves_the_outcome_unknown(model, contend_target):
    """c0's reserve(2) runs on the server but its reply is lost (it raises): it may have taken
    effect, so stock() = 1 afterwards is no violation, and neither would 3 be."""
    made = _forced(contend_target, "stock_script", model=model)
    try:
        made.call(0, "restock", (3,))
        _run(made, 0)
        made.call(0, "reserve", (2,))
        made.step_client(0, lose=LostReply.CONNECTION)
        _run(made, 0)
        assert made.indeterminate(0)
        made.call(1, "stock", ())
        _run(made, 1)
        assert made.scheduler.clients[1].outcome.value == 1
        made.check_quiescent()
        assert not made.failed
    finally:
        made.failed = True
        made.teardown()


def test_a_crashed_client_leaves_the_outcome_unknown(contend_target):
    """The twin's reserve dies between its read and its write: nothing was taken, and stock()
    reads 3; the crashed operation is left out (or in) as the search needs."""
    made = _forced(contend_target, "stock_get_then_decr")
    try:
        made.call(0, "restock", (3,))
        _run(made, 0)
        made.call(0, "reserve", (2,))
        made.step_client(0)  # GET
        made.crash_client(_Draws([0]), True)
        made.call(1, "stock", ())
        _run(made, 1)
        made.check_quiescent()
        assert not made.failed
    finally:
        made.failed = True
        made.teardown()


def test_a_redis_error_is_reported_plainly(contend_target):
    made = _forced(
        contend_target,
        "bad_inputs",
        factory="script_error",
        operations=f"{FIXTURES}.bad_inputs:SCRIPT_ERROR_OPERATIONS",
    )
    try:
        made.call(0, "reserve", (1,))
        with pytest.raises(Exception):  # noqa: B017
            _run(made, 0)
        assert made.violation.property == NO_SPURIOUS_ERRORS
        assert "c0 reserve(1) raised ResponseError" in made.violation.detail
    finally:
        made.failed = True
        made.teardown()


def test_results_a_re_run_cannot_reproduce_are_not_judged(contend_target):
    """Random tokens: a re-run gives other ones, so the example is not judged (never a false alarm)."""
    made = _forced(
        contend_target, "bad_inputs", factory="tokens", operations=f"{FIXTURES}.bad_inputs:TOKEN_OPERATIONS"
    )
    try:
        made.unjudged = {}
        made.call(0, "issue", ())
        _run(made, 0)
        made.check_quiescent()
        assert not made.failed
        assert "give a model" in made.unjudged["random"]
    finally:
        made.failed = True
        made.teardown()


def test_a_ttl_the_clock_ran_out_is_not_judged(contend_target):
    """A value kept for 1 s, then a 2 s stall: get() answers None where a sequential run (with no
    time) answers 'a'. Not judged, and said so: never a false alarm."""
    made = _forced(
        contend_target,
        "bad_inputs",
        factory="expiring",
        operations=f"{FIXTURES}.bad_inputs:EXPIRING_OPERATIONS",
    )
    try:
        made.unjudged = {}
        made.call(0, "put", ("a",))
        _run(made, 0)
        made.scheduler.advance(STALL_SECONDS, note="a stall")
        made.call(1, "get", ())
        _run(made, 1)
        assert made.scheduler.clients[1].outcome.value is None
        made.check_quiescent()
        assert not made.failed
        assert "TTL ran out" in made.unjudged["expiry"]
    finally:
        made.failed = True
        made.teardown()


def test_the_re_run_and_the_model_agree_on_a_history(contend_target, client):
    """The two specifications, stepped by the WGL search over one history: restock(3), then two
    overlapping reserve(2) that both say True (not linearizable), or one True and one False."""
    from tests.fixtures.operations.stock_script import StockModel, make

    def history(second: bool) -> list[Record]:
        return [
            Record(0, "invoke", "restock", value=(3,), time=1),
            Record(0, "ok", "restock", value=Outcome(3), time=2),
            Record(1, "invoke", "reserve", value=(2,), time=3),
            Record(2, "invoke", "reserve", value=(2,), time=4),
            Record(1, "ok", "reserve", value=Outcome(True), time=5),
            Record(2, "ok", "reserve", value=Outcome(second), time=6),
        ]

    rerun = ReRunSpec(make, client, "contend:test-rerun")
    try:
        for spec in (rerun, ModelSpec(StockModel)):
            bad = check_history(history(True), SpecModel(spec))
            good = check_history(history(False), SpecModel(spec))
            assert bad.outcome is Linearizability.NOT_LINEARIZABLE
            assert good.outcome is Linearizability.LINEARIZABLE
    finally:
        rerun.close()


def test_outcomes_compare_by_value():
    assert Outcome(b"ok") == Outcome("ok")
    assert Outcome((1, 2)) == Outcome([1, 2])
    assert Outcome(raised="KeyError") != Outcome(None)
    assert Outcome.of(lambda: {}["x"]) == Outcome(raised="KeyError")


class _Draws:
    """A stand-in for Hypothesis's data object: draws the given values in turn."""

    def __init__(self, values: list[object]) -> None:
        self.values = list(values)

    def draw(self, strategy: object, label: str = "") -> object:
        return self.values.pop(0)


@pytest.mark.parametrize("module", ASYNC_CORRECT)
def test_an_async_primitive_is_linearizable_against_its_async_re_run(module, contend_target):
    made = machine(contend_target, module)
    assert made.asynchronous
    _, violation, _ = run_once(made, contend_target, seed=1, max_examples=60, shrink=False)
    assert violation is None, violation


@pytest.mark.parametrize(
    ("module", "caught"), [("stock_async_decr_then_refund", True), ("stock_async_watch", False)]
)
def test_an_async_reservation_that_overdraws_is_seen(module, caught, contend_target):
    """Stock 1; c0 reserves 2 and c1 reserves 1, their round trips taking turns: the twin's c0
    takes first (the stock reads -1), so c1 is refused and gives back; the WATCH reservation of
    c0 is refused on its read, c1's granted."""
    made = _forced(contend_target, module)
    try:
        made.call(0, "restock", (1,))
        _run(made, 0)
        made.call(0, "reserve", (2,))
        made.call(1, "reserve", (1,))
        _take_turns(made)
        assert made.scheduler.clients[1].outcome.value is (not caught)
        _judged(made, caught, "reserve(1) returned False")
    finally:
        made.failed = True
        made.teardown()


def test_a_lost_exec_reply_under_watch_leaves_an_async_outcome_unknown(contend_target):
    """c0's reserve(2) commits, but the reply to its EXEC is lost: redis-py raises WatchError for
    it, which the fixture lets out (it may have run). Its outcome is unknown, so stock() = 1
    afterwards is no violation."""
    made = _forced(contend_target, "stock_async_watch")
    try:
        made.call(0, "restock", (3,))
        _run(made, 0)
        made.call(0, "reserve", (2,))
        made.step_client(0)  # WATCH
        made.step_client(0)  # GET
        made.step_client(0, lose=LostReply.CONNECTION)  # MULTI; DECRBY; EXEC
        _run(made, 0)
        assert made.indeterminate(0)
        made.call(1, "stock", ())
        _run(made, 1)
        assert made.scheduler.clients[1].outcome.value == 1
        made.check_quiescent()
        assert not made.failed
    finally:
        made.failed = True
        made.teardown()


def test_the_async_re_run_judges_a_history_as_the_model_does(contend_target, client):
    """The re-run of async code, on a loop and redis.asyncio client of its own: the same verdicts
    as the model on restock(3) and two overlapping reserve(2)."""
    from tests.fixtures.operations.stock_async_watch import StockModel, make

    def history(second: bool) -> list[Record]:
        return [
            Record(0, "invoke", "restock", value=(3,), time=1),
            Record(0, "ok", "restock", value=Outcome(3), time=2),
            Record(1, "invoke", "reserve", value=(2,), time=3),
            Record(2, "invoke", "reserve", value=(2,), time=4),
            Record(1, "ok", "reserve", value=Outcome(True), time=5),
            Record(2, "ok", "reserve", value=Outcome(second), time=6),
        ]

    rerun = ReRunSpec(make, client, "contend:test-async-rerun", async_client=contend_target.async_client)
    try:
        for spec in (rerun, ModelSpec(StockModel)):
            assert check_history(history(True), SpecModel(spec)).outcome is Linearizability.NOT_LINEARIZABLE
            assert check_history(history(False), SpecModel(spec)).outcome is Linearizability.LINEARIZABLE
        assert rerun.runs > 0
    finally:
        rerun.close()
    assert rerun._loop is None  # closed with its client


def test_a_crashed_async_client_is_replaced_by_an_async_one(contend_target):
    """c0 dies in its WATCH reservation: nothing was taken (stock() reads 3, no false alarm), and
    the client that takes its place has a redis.asyncio connection of its own."""
    import redis.asyncio

    made = _forced(contend_target, "stock_async_watch")
    try:
        made.call(0, "restock", (3,))
        _run(made, 0)
        made.call(0, "reserve", (2,))
        made.step_client(0)  # WATCH
        made.crash_client(_Draws([0]), True)
        fresh = max(made.conn_of)
        assert isinstance(made.conn_of[fresh], redis.asyncio.Redis)
        made.call(fresh, "stock", ())
        _run(made, fresh)
        assert made.scheduler.clients[fresh].outcome.value == 3
        made.check_quiescent()
        assert not made.failed
    finally:
        made.failed = True
        made.teardown()
