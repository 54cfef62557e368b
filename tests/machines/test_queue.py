"""contend.machines.queue: correct queues keep every property, each known-bad one is caught for what
it breaks, and the machine's judgements on schedules forced step by step."""

from __future__ import annotations

import pytest

from contend.impl.catalog import FIFO, NO_DOUBLE_DELIVERY, NO_LOSS, async_by_name, by_name, family
from contend.machines.family import family_machine
from contend.machines.hunt import run_once
from contend.machines.queue import QueueMachine

KNOWN_BAD = [pytest.param(i, id=i.name) for i in family("queue") if i.known_bad]


@pytest.mark.parametrize("name", ["list_queue", "stream_queue"])
def test_a_correct_queue_keeps_its_properties(name, contend_target):
    _, violation, _ = run_once(
        family_machine(by_name(name)), contend_target, seed=1, max_examples=40, shrink=False
    )
    assert violation is None, violation


def test_the_async_machine_passes_an_async_queue_and_catches_its_short_claim(contend_target):
    """The same machine with redis.asyncio clients: the twin of stream_queue keeps every property,
    and the twin of short_claim_queue is caught handing a held job to a second consumer."""
    machine = family_machine(async_by_name("async_stream_queue"))
    assert machine.asynchronous
    _, violation, _ = run_once(machine, contend_target, seed=1, max_examples=40, shrink=False)
    assert violation is None, violation
    bad = family_machine(async_by_name("async_short_claim_queue"))
    _, violation, _ = run_once(bad, contend_target, seed=0, max_examples=500, shrink=False)
    assert violation is not None and violation.property == NO_DOUBLE_DELIVERY, violation


@pytest.mark.parametrize("impl", KNOWN_BAD)
def test_a_known_bad_queue_is_caught_for_what_it_breaks(impl, contend_target):
    _, violation, _ = run_once(family_machine(impl), contend_target, seed=0, max_examples=500, shrink=False)
    assert violation is not None, f"{impl.name} was not caught"
    assert violation.property in impl.violates, violation


def test_a_queue_without_a_lease_that_loses_a_crashed_consumers_job(contend_target):
    """brpop_queue declares no lease: the job its consumer died with is lost, and the evidence says
    the drain never got it."""
    machine = family_machine(by_name("brpop_queue"))(contend_target)
    try:
        machine.put(0, False)
        machine.advance_all()
        machine.take(0, 0.0, 0.0, "die", 0.0)
        machine.advance_all()
        with pytest.raises(Exception):  # noqa: B017 (outside a Hypothesis test, its note() raises too)
            machine.check_quiescent()
        assert machine.violation.property == NO_LOSS
        assert "'job-1'" in machine.violation.detail and "got it 0 time(s)" in machine.violation.detail
    finally:
        machine.failed = True  # teardown only cleans up
        machine.teardown()


def test_fifo_is_judged_on_first_deliveries(contend_target):
    """A LIFO queue claiming fifo: put a, put b, take → b is caught at once."""

    def lifo(client, name, lease_ms=10_000):
        from contend.impl.queue.lease_list import LeaseListQueue

        class Lifo(LeaseListQueue):
            def move(self, timeout):
                moved = self.client.lmove(self.keys[0], self.keys[1], "LEFT", "LEFT")
                return None if moved is None else moved.decode()

        return Lifo(client, name, lease_ms=lease_ms)

    machine_type = type(
        "LifoMachine", (QueueMachine,), {"factory": staticmethod(lifo), "claims": frozenset({FIFO})}
    )
    machine = machine_type(contend_target)
    try:
        machine.put(0, False)
        machine.advance_all()
        machine.put(1, False)
        machine.advance_all()
        machine.take(2, 0.0, 0.0, "ack", 0.0)
        with pytest.raises(Exception):  # noqa: B017
            machine.advance_all()
        assert machine.violation.property == FIFO and "'job-2'" in machine.violation.detail
    finally:
        machine.failed = True
        machine.teardown()


def test_two_takes_that_both_got_one_job_are_a_double_delivery(contend_target):
    """peek_take_queue, interleaved by hand: both takers read the head before either removes it."""
    machine = family_machine(by_name("peek_take_queue"))(contend_target)
    try:
        machine.put(0, False)
        machine.advance_all()
        machine.take(0, 0.0, 0.3, "ack", 0.0)  # client 0
        machine.take(0, 0.0, 0.3, "ack", 0.0)  # the first idle one now: client 1
        for index in (0, 0, 1, 1):  # reap, LRANGE each
            machine.scheduler.step(index)
        with pytest.raises(Exception):  # noqa: B017
            machine.advance_all()
        assert machine.violation.property == NO_DOUBLE_DELIVERY
    finally:
        machine.failed = True
        machine.teardown()


def test_a_valid_holders_refused_ack_leaves_the_job_to_come_back(contend_target):
    """The protocol: a valid holder's ack may be refused, and the job is then delivered again. A
    queue whose ack says False yet removes the job fails no-loss (not the refusal itself)."""

    def lying(client, name, lease_ms=10_000):
        from contend.impl.queue.lease_list import LeaseListQueue

        class LyingAck(LeaseListQueue):
            def ack(self, job):
                super().ack(job)
                return False

        return LyingAck(client, name, lease_ms=lease_ms)

    machine_type = type(
        "LyingAckMachine", (QueueMachine,), {"factory": staticmethod(lying), "claims": frozenset({NO_LOSS})}
    )
    machine = machine_type(contend_target)
    try:
        machine.put(0, False)
        machine.advance_all()
        machine.take(1, 0.0, 0.0, "ack", 0.0)
        machine.advance_all()  # the ack returns False within the lease: refused, so not acked
        assert machine.deliveries[0].acked == "refused"
        with pytest.raises(Exception):  # noqa: B017
            machine.check_quiescent()
        assert machine.violation.property == NO_LOSS
        assert "acked 0 time(s)" in machine.violation.detail and "refused" in machine.violation.detail
    finally:
        machine.failed = True
        machine.teardown()


def test_a_queue_with_a_lease_of_minutes_is_no_livelock(contend_target):
    """A queue that declares a long lease (arq's: the job timeout plus 10 s) and takes no lease_ms:
    its consumers work for shares of that lease, longer than the base machine's end-of-example
    bound, which is then the machine's operation bound (it was a false livelock)."""
    from contend.impl.queue.stream import StreamQueue

    def long_lease(client, name):
        return StreamQueue(client, name, lease_ms=310_000)

    machine_type = type(
        "LongLeaseMachine",
        (QueueMachine,),
        {"factory": staticmethod(long_lease), "claims": frozenset({NO_LOSS, NO_DOUBLE_DELIVERY})},
    )
    _, violation, _ = run_once(machine_type, contend_target, seed=1, max_examples=40, shrink=False)
    assert violation is None, violation
