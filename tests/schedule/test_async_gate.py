"""The scheduler on redis.asyncio code: one round trip at a time, virtual time, cancellation."""

from __future__ import annotations

import asyncio
import time

import pytest
import redis.asyncio

from contend.schedule import ReplayChooser, Scheduler, SchedulerError
from contend.schedule.gating import CancelAt


def async_clients(target, scheduler, n):
    """n async clients, each with its own redis.asyncio.Redis (used only on that client's loop)."""
    made = []
    for _ in range(n):
        conn = redis.asyncio.Redis.from_url(target.url)
        made.append(conn)
        scheduler.add_client(connection=conn)
    return made


async def read_then_write(conn, key):
    value = await conn.get(key)
    await conn.set(key, int(value or 0) + 1)
    return int(value or 0) + 1


def increments(target, prefix, schedule):
    key = f"{prefix}:n"
    with Scheduler() as s:
        conns = async_clients(target, s, 2)
        for i, conn in enumerate(conns):
            s.start(i, lambda conn=conn: read_then_write(conn, key), "increment")
        s.run_all(ReplayChooser(schedule))
        results = [c.outcome.value for c in s.clients]
        trace = s.format_trace()
    return results, trace, target.client().get(key)


def test_two_coroutines_interleave_one_round_trip_at_a_time(contend_target, ns):
    results, trace, final = increments(contend_target, ns.child("race"), [0, 1, 0, 1])
    assert results == [1, 1] and final == b"1", "both read 0: the lost update the schedule chose"
    assert "c0   GET" in trace and "c1   GET" in trace and "c0   SET" in trace
    results, _, final = increments(contend_target, ns.child("serial"), [0, 0, 1, 1])
    assert sorted(results) == [1, 2] and final == b"2"


def test_the_same_schedule_gives_the_same_trace(contend_target, ns):
    first = increments(contend_target, ns.child("a"), [0, 1, 1, 0])
    second = increments(contend_target, ns.child("b"), [0, 1, 1, 0])
    normalise = lambda t: t.replace(ns.child("a"), "NS").replace(ns.child("b"), "NS")  # noqa: E731
    assert first[0] == second[0] and normalise(first[1]) == normalise(second[1])


def test_asyncio_sleep_and_timeouts_run_on_virtual_time(contend_target, ns):
    key = ns.key("never")

    async def poll_forever(conn):
        while await conn.get(key) is None:
            await asyncio.sleep(0.5)

    async def bounded(conn):
        start = asyncio.get_running_loop().time()
        try:
            await asyncio.wait_for(poll_forever(conn), timeout=30)
        except asyncio.TimeoutError:
            return asyncio.get_running_loop().time() - start
        return None

    began = time.monotonic()
    with Scheduler() as s:
        (conn,) = async_clients(contend_target, s, 1)
        s.start(0, lambda: bounded(conn), "bounded poll")
        s.run_all(lambda current, ready: ready[0])
        waited = s.clients[0].outcome.value
        assert s.vclock >= 30
    assert waited is not None and 30 <= waited < 31, "the timeout fired at 30 virtual seconds"
    assert time.monotonic() - began < 10, "no real waiting"


def test_a_transaction_is_one_step(contend_target, ns):
    async def transfer(conn):
        async with conn.pipeline(transaction=True) as pipe:
            pipe.incr(ns.key("a")).decr(ns.key("b"))
            return await pipe.execute()

    with Scheduler() as s:
        (conn,) = async_clients(contend_target, s, 1)
        s.start(0, lambda: transfer(conn), "transfer")
        s.run_all(lambda current, ready: ready[0])
        assert s.clients[0].outcome.value == [1, -1]
        steps = [t for t in s.trace if t.sent]
        assert len(steps) == 1 and [c[0] for c in steps[0].sent] == ["MULTI", "INCRBY", "DECRBY", "EXEC"]


@pytest.mark.parametrize(("where", "written"), [(CancelAt.BEFORE_SEND, None), (CancelAt.AFTER_SEND, b"1")])
def test_a_cancellation_lands_where_the_scheduler_says(contend_target, ns, where, written):
    key = ns.key(where.name)
    with Scheduler() as s:
        (conn,) = async_clients(contend_target, s, 1)
        s.start(0, lambda: conn.set(key, 1), "set")
        step = s.cancel(0, where)
        outcome = s.clients[0].outcome
        assert isinstance(outcome.error, asyncio.CancelledError) and s.idle(0)
        assert step.note == f"cancelled {where.value}" + (f" (SET {key} 1)" if written else "")
        # The client lives on: its next operation works (redis-py drops the connection it left mid-reply).
        s.start(0, lambda: conn.get(key), "get")
        s.run_all(lambda current, ready: ready[0])
        assert s.clients[0].outcome.value == written
    assert contend_target.client().get(key) == written


def test_a_sleeping_client_can_be_cancelled_and_a_sync_one_cannot(contend_target, ns):
    async def nap(conn):
        await conn.ping()
        await asyncio.sleep(5)
        await conn.set(ns.key("late"), 1)

    with Scheduler() as s:
        (conn,) = async_clients(contend_target, s, 1)
        s.start(0, lambda: nap(conn), "nap")
        s.step(0)  # PING, then asleep
        with pytest.raises(SchedulerError, match="cannot be cancelled before its command is sent"):
            s.cancel(0, CancelAt.BEFORE_SEND)
        s.cancel(0, CancelAt.SLEEPING)
        assert isinstance(s.clients[0].outcome.error, asyncio.CancelledError)
        sync = s.add_client(connection=contend_target.client())
        s.start(sync, lambda: contend_target.client().ping(), "ping")
        with pytest.raises(SchedulerError, match="only async code can be cancelled"):
            s.cancel(sync, CancelAt.BEFORE_SEND)
    assert contend_target.client().get(ns.key("late")) is None


def test_a_crashed_async_client_sends_nothing_more(contend_target, ns):
    with Scheduler() as s:
        (conn,) = async_clients(contend_target, s, 1)
        s.start(0, lambda: read_then_write(conn, ns.key("c")), "increment")
        s.step(0)  # GET
        s.crash(0)
        assert s.idle(0) and not s.clients[0].outcome.done
    assert contend_target.client().get(ns.key("c")) is None


def test_a_blocking_pop_is_polled_on_virtual_time(contend_target, ns):
    """BLPOP never leaves the server blocking: its timeout passes in virtual time, and an element
    another client pushes meanwhile is popped."""
    key = ns.key("queue")

    async def wait(conn):
        return await conn.blpop([key], timeout=60)

    began = time.monotonic()
    with Scheduler() as s:
        waiter, pusher = async_clients(contend_target, s, 2)
        s.start(0, lambda: wait(waiter), "blpop")
        s.run_all(lambda current, ready: ready[0])
        assert s.clients[0].outcome.value is None and s.vclock >= 60, "timed out, virtually"
        s.start(0, lambda: wait(waiter), "blpop")
        s.step(0)  # one empty pass, then asleep
        s.start(1, lambda: pusher.rpush(key, "x"), "rpush")
        s.run_all(lambda current, ready: ready[-1])
        assert s.clients[0].outcome.value == [key.encode(), b"x"]
    assert time.monotonic() - began < 10


def test_an_async_lost_reply_is_resent_by_the_clients_retry(contend_target, ns):
    from redis.asyncio.retry import Retry
    from redis.backoff import ExponentialWithJitterBackoff

    from contend.schedule.gating import LostReply

    key = ns.key("n")
    with Scheduler() as s:
        plain = redis.asyncio.Redis.from_url(contend_target.url)
        retrying = redis.asyncio.Redis.from_url(
            contend_target.url, retry=Retry(ExponentialWithJitterBackoff(1, 0.01), 3)
        )
        for conn in (plain, retrying):
            s.add_client(connection=conn)
        outcomes = []
        for index, conn in enumerate((plain, retrying)):
            s.start(index, lambda conn=conn: conn.incr(key), "incr")
            s.step(index, lose=LostReply.CONNECTION)
            while index in s.runnable():
                s.step(index)
            outcomes.append(s.clients[index].outcome)
        resent = [step for step in s.trace if step.resend_of is not None]
    assert isinstance(outcomes[0].error, redis.ConnectionError)  # from_url: no resend
    assert outcomes[1].value == 3  # ran at 2, lost, resent: 3
    assert contend_target.client().get(key) == b"3"
    assert len(resent) == 1 and resent[0].resent_by.startswith("redis-py's Retry")


def test_an_async_lost_reply_to_a_script_the_server_had_not_cached_is_the_loaded_scripts(contend_target, ns):
    """As in the sync gate: NOSCRIPT ran nothing, the reply lost is the loaded script's."""
    from contend.schedule.gating import LostReply

    key = ns.key("n")
    with Scheduler() as s:
        (conn,) = async_clients(contend_target, s, 1)
        script = conn.register_script(f"-- {key}\nreturn redis.call('INCR', KEYS[1])")  # a new SHA1
        s.start(0, lambda: script(keys=[key]), "incr")
        s.step(0, lose=LostReply.CONNECTION)
        while 0 in s.runnable():
            s.step(0)
        outcome = s.clients[0].outcome
        steps = [step for step in s.trace if step.sent]
    assert isinstance(outcome.error, redis.ConnectionError) and "was lost" in str(outcome.error)
    assert contend_target.client().get(key) == b"1"
    assert len(steps) == 1 and steps[0].lost == "ConnectionError"
