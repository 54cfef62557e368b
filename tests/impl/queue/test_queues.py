"""The catalog's queues on a real server: the protocol, the leases, and each known-bad one's defect
forced by the scheduler (never waited for)."""

from __future__ import annotations

import threading

import pytest

from contend.impl.catalog import family
from contend.impl.queue import lease_list, pop, stream, value_list
from contend.schedule import Scheduler

QUEUES = family("queue")
LEASE_MS = 10_000


def clients(target, n):
    made = [target.client() for _ in range(n)]
    for c in made:
        c.ping()
    return made


def alone(s, index, operation, label="op"):
    """Run one operation on client `index` to its end, every other client paused; its outcome."""
    s.start(index, operation, label)
    while index in s.runnable():
        s.step(index)
    return s.clients[index].outcome


@pytest.fixture
def scheduled(contend_target):
    """A scheduler on the server's clock with three clients: (scheduler, connections)."""
    conns = clients(contend_target, 3)
    with Scheduler(clock=contend_target.clock) as s:
        for c in conns:
            s.add_client(connection=c)
        yield s, conns
    for c in conns:
        c.close()


@pytest.mark.parametrize("impl", [pytest.param(i, id=i.name) for i in QUEUES])
def test_every_queue_follows_the_protocol(impl, client, ns):
    q = impl.factory(client, ns.key("q"), lease_ms=LEASE_MS)
    ids = [q.put(item) for item in ("a", {"b": [1, 2]}, "c")]
    got = []
    for _ in range(3):
        got.append(q.take(0))
        q.ack(got[-1][0])
    assert [item for _, item in got] == ["a", {"b": [1, 2]}, "c"]  # every catalog queue is FIFO
    assert [job for job, _ in got] == ids
    assert q.take(0) is None and q.take(0.01) is None


@pytest.mark.parametrize("impl", [pytest.param(i, id=i.name) for i in QUEUES])
def test_bad_input_is_refused_before_anything_is_written(impl, client, ns):
    with pytest.raises(ValueError):
        impl.factory(client, "", lease_ms=LEASE_MS)
    q = impl.factory(client, ns.key("q"), lease_ms=LEASE_MS)
    with pytest.raises(ValueError):
        q.take(-1)
    with pytest.raises((TypeError, ValueError)):
        q.put(threading.Lock())
    assert ns.count() == 0


def test_list_queue_gives_a_job_again_only_once_its_lease_ran_out(scheduled, ns):
    s, conns = scheduled
    a, b = (lease_list.factory(c, ns.key("q"), lease_ms=LEASE_MS) for c in conns[:2])
    a.put("job")
    job, _ = alone(s, 0, lambda: a.take(0)).value
    assert alone(s, 1, lambda: b.take(0)).value is None  # leased to a
    s.advance(LEASE_MS / 1000)
    assert alone(s, 1, lambda: b.take(0)).value == (job, "job")
    assert alone(s, 0, lambda: a.ack(job)).value is False  # a's lease ran out and b holds it
    assert alone(s, 1, lambda: b.ack(job)).value is True
    assert alone(s, 0, lambda: a.take(0)).value is None


def test_list_queue_extend_and_nack(scheduled, ns):
    s, conns = scheduled
    a, b = (lease_list.factory(c, ns.key("q"), lease_ms=LEASE_MS) for c in conns[:2])
    a.put("job")
    job, _ = alone(s, 0, lambda: a.take(0)).value
    s.advance(0.8 * LEASE_MS / 1000)
    assert alone(s, 0, lambda: a.extend(job, LEASE_MS)).value is True
    s.advance(0.8 * LEASE_MS / 1000)
    assert alone(s, 1, lambda: b.take(0)).value is None  # still a's: the extend moved the lease's end
    assert alone(s, 0, lambda: a.nack(job)).value is True
    assert alone(s, 1, lambda: b.take(0)).value == (job, "job")  # given back: at once


def test_list_queue_a_job_whose_taker_died_before_leasing_it_waits_one_lease(scheduled, ns):
    """A consumer that dies between BLMOVE and its lease script leaves an orphan in processing: the
    reaper gives it a lease's grace from when it first saw it, then requeues it."""
    s, conns = scheduled
    dying, b = (lease_list.factory(c, ns.key("q"), lease_ms=LEASE_MS) for c in conns[:2])
    dying.put("job")
    assert alone(s, 0, lambda: dying.move(0)).value == "1"  # moved, never leased: then it died
    assert alone(s, 1, lambda: b.take(0)).value is None  # the reaper first sees the orphan here
    s.advance(0.9 * LEASE_MS / 1000)
    assert alone(s, 1, lambda: b.take(0)).value is None
    s.advance(0.2 * LEASE_MS / 1000)
    assert alone(s, 1, lambda: b.take(0)).value == ("1", "job")


@pytest.mark.parametrize(
    ("factory", "claimed"), [(stream.factory, False), (stream.short_claim_factory, True)]
)
def test_stream_queue_claims_a_silent_consumers_job_only_past_the_lease(factory, claimed, scheduled, ns):
    s, conns = scheduled
    a, b = (factory(c, ns.key("q"), lease_ms=LEASE_MS) for c in conns[:2])
    job = a.put("job")
    assert alone(s, 0, lambda: a.take(0)).value == (job, "job")
    s.advance(0.6 * LEASE_MS / 1000)  # a is still inside its lease
    got = alone(s, 1, lambda: b.take(0)).value
    assert got == ((job, "job") if claimed else None)
    s.advance(0.6 * LEASE_MS / 1000)
    if not claimed:
        assert alone(s, 1, lambda: b.take(0)).value == (job, "job")  # 1.2 leases: taken over


def test_blind_reaper_requeues_a_job_its_holder_still_leases(scheduled, ns):
    s, conns = scheduled
    a, b, c = (lease_list.blind_reaper_factory(x, ns.key("q"), lease_ms=LEASE_MS) for x in conns)
    a.put("job")
    job, _ = alone(s, 0, lambda: a.take(0)).value
    assert alone(s, 1, lambda: b.take(0)).value is None  # the sweep marks it
    assert alone(s, 2, lambda: c.take(0)).value == (job, "job")  # the next requeues it: a holds it


def test_peek_take_hands_one_job_to_two_takers(scheduled, ns):
    s, conns = scheduled
    a, b = (lease_list.peek_then_remove_factory(x, ns.key("q"), lease_ms=LEASE_MS) for x in conns[:2])
    a.put("job")
    s.start(0, lambda: a.take(0), "take")
    s.start(1, lambda: b.take(0), "take")
    for index in (0, 0, 1, 1):  # each reaps, then reads the same head with LRANGE
        s.step(index)
    while s.runnable():
        s.step(s.runnable()[0])
    assert s.clients[0].outcome.value == s.clients[1].outcome.value == ("1", "job")


def test_ack_by_value_takes_the_other_consumers_copy(scheduled, ns):
    s, conns = scheduled
    a, b, c = (value_list.factory(x, ns.key("q"), lease_ms=LEASE_MS) for x in conns)
    a.put("same")
    a.put("same")
    first = alone(s, 0, lambda: a.take(0)).value
    second = alone(s, 1, lambda: b.take(0)).value
    assert first == second == ('"same"', "same")
    assert alone(s, 0, lambda: a.ack(first[0])).value == 2  # both copies left processing
    assert alone(s, 1, lambda: b.nack(second[0])).value is False  # b's copy is gone: nothing to give back
    s.advance(3 * LEASE_MS / 1000)
    assert alone(s, 2, lambda: c.take(0)).value is None
    s.advance(3 * LEASE_MS / 1000)
    assert alone(s, 2, lambda: c.take(0)).value is None  # lost


def test_brpop_queue_loses_what_a_consumer_took(client, ns):
    q = pop.factory(client, ns.key("q"))
    assert q.lease_ms is None  # it declares no lease: a job is never given out twice
    q.put("job")
    assert q.take(0) == ("1", "job")  # ... and its consumer dies before it is done
    assert q.take(0) is None and ns.count() == 1  # only the id counter is left
