"""models.queue: what a take may return, FIFO for first deliveries, refused or harmless acks."""

from __future__ import annotations

import pytest

from contend.models.base import UNKNOWN, Op
from contend.models.queue import OK, REFUSED, QueueModel, ready_items


def run(model, ops):
    """Each op's legality, threading the state through."""
    state, legal = model.init(), []
    for op in ops:
        ok, state = model.step(state, op)
        legal.append(ok)
    return legal, state


def put(item, job, p="p0"):
    return Op("put", item, job, "q", p)


def take(out, p="p1"):
    return Op("take", None, out, "q", p)


def test_a_take_returns_a_ready_job_once():
    model = QueueModel()
    legal, state = run(model, [put("a", "1"), put("b", "2"), take(("2", "b")), take(("1", "a"), "p2")])
    assert legal == [True] * 4 and ready_items(state) == []
    assert run(model, [put("a", "1"), take(("1", "a")), take(("1", "a"), "p2")])[0][-1] is False
    assert run(model, [put("a", "1"), take(("9", "zzz"))])[0][-1] is False  # never put
    assert run(model, [put("a", "1"), take(None)])[0][-1] is False  # nothing came though one was ready
    assert run(model, [take(None)])[0] == [True]


def test_fifo_orders_first_deliveries_but_not_jobs_given_back():
    fifo = QueueModel(fifo=True)
    assert run(fifo, [put("a", "1"), put("b", "2"), take(("2", "b"))])[0][-1] is False
    ops = [put("a", "1"), put("b", "2"), take(("1", "a")), Op("nack", "1", OK, "q", "p1"), take(("2", "b"))]
    assert run(fifo, ops)[0] == [True] * 5  # a given back may come later (or first)


def test_ack_by_the_holder_is_final_and_others_acks_change_nothing():
    model = QueueModel()
    ops = [
        put("a", "1"),
        take(("1", "a")),
        Op("ack", "1", REFUSED, "q", "p2"),  # not p2's: refused is fine
        Op("ack", "1", OK, "q", "p2"),  # ... and so is doing nothing
        Op("ack", "1", OK, "q", "p1"),
        take(None, "p2"),
    ]
    assert run(model, ops)[0] == [True] * 6
    assert run(model, [put("a", "1"), take(("1", "a")), Op("ack", "1", REFUSED, "q", "p1")])[0][-1] is False


def test_lapse_makes_held_jobs_ready_again_and_unknown_puts_may_come_out():
    model = QueueModel()
    legal, _state = run(model, [put("a", "1"), take(("1", "a")), Op("lapse"), take(("1", "a"), "p2")])
    assert legal == [True] * 4
    legal, _ = run(model, [put("x", UNKNOWN), take(None), take(("7", "x"))])
    assert legal == [True, True, True]  # the put may have happened: its job may come out


def test_bad_operations_are_refused():
    with pytest.raises(ValueError, match="no operation 'pop'"):
        QueueModel().step(QueueModel().init(), Op("pop", process="p"))
    with pytest.raises(ValueError, match="acting client"):
        QueueModel().step(QueueModel().init(), Op("take"))
