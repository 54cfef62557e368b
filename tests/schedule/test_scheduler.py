"""The controlled scheduler: one round trip at a time, deterministic, virtual time, replay."""

from __future__ import annotations

import logging
import time

import pytest
import redis

from contend.impl.registry import LuaRegistry, NaiveRegistry
from contend.schedule import (
    BoundedPreemption,
    PCTChooser,
    RandomWalk,
    ReplayChooser,
    ReplayDiverged,
    Scheduler,
    SchedulerError,
    gate,
    gating,
)
from contend.servers.payload import decode_packed


def clients(target, n):
    made = [target.client() for _ in range(n)]
    for c in made:
        c.ping()
    return made


def register_race(target, ns, cls, chooser, name="a"):
    """Two clients register one name; returns (outcomes, trace text, schedule)."""
    conns = clients(target, 2)
    with Scheduler() as s:
        regs = [cls(c, ns.child(name)) for c in conns]
        for c in conns:
            s.add_client(connection=c)
        for i, reg in enumerate(regs):
            s.start(i, lambda reg=reg: reg.register(name), f"register({name!r})")
        s.run_all(chooser)
        outcomes = [c.outcome for c in s.clients]
        text, schedule = s.format_trace(), list(s.schedule)
    for c in conns:
        c.close()
    return outcomes, text, schedule


RACE = [0, 1, 0, 0, 1, 1, 0]  # c0 HGET, c1 HGET, c0 INCR, c0 HSETNX, c1 INCR, c1 HSETNX (fails), c0 ...


def test_a_replayed_schedule_exposes_the_naive_race(contend_target, ns):
    outcomes, text, schedule = register_race(contend_target, ns, NaiveRegistry, ReplayChooser(RACE))
    errors = [o.error for o in outcomes if o.error]
    assert len(errors) == 1 and "Failed to register" in str(errors[0])
    assert schedule == RACE
    assert "c1   HSETNX" in text and "→  0" in text


def test_the_same_schedule_gives_the_same_outcome(contend_target, ns):
    first = register_race(contend_target, ns, NaiveRegistry, ReplayChooser(RACE), name="x")
    again = register_race(contend_target, ns, NaiveRegistry, ReplayChooser(RACE), name="y")
    assert [(o.value, type(o.error)) for o in first[0]] == [(o.value, type(o.error)) for o in again[0]]
    assert first[1].replace(":x:", ":y:").replace("'x'", "'y'").replace(" x ", " y ") == again[1]


def test_exactly_one_round_trip_per_step(contend_target, ns):
    conns = clients(contend_target, 1)
    with Scheduler() as s:
        s.add_client(connection=conns[0])
        key = ns.key("k")
        s.start(0, lambda: [conns[0].incr(key) for _ in range(3)], "three INCRs")
        steps = []
        while s.runnable():
            steps.append(s.step(0))
    assert [st.sent for st in steps] == [[["INCRBY", key, "1"]]] * 3
    assert [st.replies for st in steps] == [[1], [2], [3]]
    conns[0].close()


def test_multi_exec_is_one_atomic_step(contend_target, ns):
    conns = clients(contend_target, 1)
    key = ns.key("k")

    def transaction():
        with conns[0].pipeline() as pipe:
            pipe.incr(key).incr(key).execute()

    with Scheduler() as s:
        s.add_client(connection=conns[0])
        s.start(0, transaction, "MULTI/EXEC")
        steps = [s.step(0) for _ in range(len(s.runnable()))]
    assert len(steps) == 1
    assert [cmd[0] for cmd in steps[0].sent] == ["MULTI", "INCRBY", "INCRBY", "EXEC"]
    conns[0].close()


@pytest.mark.parametrize(("split", "expected_steps"), [(False, 1), (True, 3)])
def test_plain_pipelines_can_be_split(contend_target, ns, split, expected_steps):
    conns = clients(contend_target, 1)
    key = ns.key("k")

    def pipeline():
        with conns[0].pipeline(transaction=False) as pipe:
            return pipe.incr(key).incr(key).get(key).execute()

    with Scheduler(split_pipelines=split) as s:
        s.add_client(connection=conns[0])
        s.start(0, pipeline, "pipeline")
        s.run_all(lambda current, ready: ready[0])
        assert s.clients[0].outcome.value == [1, 2, b"2"]
        assert len(s.schedule) == expected_steps
    conns[0].close()


def test_sleeps_are_virtual(contend_target):
    conns = clients(contend_target, 1)
    with Scheduler() as s:
        s.add_client(connection=conns[0])

        def slow():
            start = time.monotonic()
            time.sleep(30)
            conns[0].ping()
            return time.monotonic() - start

        began = gating.REAL_MONOTONIC()
        s.start(0, slow, "sleep 30 s")
        s.run_all(lambda current, ready: ready[0])
        assert s.clients[0].outcome.value >= 30
    assert gating.REAL_MONOTONIC() - began < 5, "a virtual 30 s sleep must not take real time"
    assert time.sleep is gating.REAL_SLEEP, "closing the scheduler restores time"
    conns[0].close()


def test_blocking_pop_is_polled_not_blocked(contend_target, ns):
    conns = clients(contend_target, 2)
    key = ns.key("queue")
    with Scheduler() as s:
        for c in conns:
            s.add_client(connection=c)
        s.start(0, lambda: conns[0].blpop([key], timeout=60), "BLPOP 60 s")
        s.step(0)  # the first poll finds nothing
        s.start(1, lambda: conns[1].rpush(key, "job"), "RPUSH")
        s.run_all(lambda current, ready: ready[-1])
        assert s.clients[0].outcome.value == [key.encode(), b"job"]
        s.start(0, lambda: conns[0].blpop([key], timeout=2), "BLPOP 2 s on an empty list")
        began = gating.REAL_MONOTONIC()
        s.run_all(lambda current, ready: ready[0])
        assert s.clients[0].outcome.ok and s.clients[0].outcome.value is None
        assert gating.REAL_MONOTONIC() - began < 2
    for c in conns:
        c.close()


def test_blocking_stream_reads_are_polled_not_blocked(contend_target, ns):
    """XREADGROUP (and XREAD) with BLOCK become polls on virtual time: an entry added meanwhile is
    read, and BLOCK 2000 on an empty stream answers nothing after 2 virtual seconds, no real ones."""
    conns = clients(contend_target, 2)
    stream = ns.key("stream")
    conns[0].xgroup_create(stream, "g", id="0", mkstream=True)
    with Scheduler() as s:
        for c in conns:
            s.add_client(connection=c)
        s.start(0, lambda: conns[0].xreadgroup("g", "c0", {stream: ">"}, count=1, block=60_000), "XREADGROUP")
        s.step(0)  # the first poll finds nothing
        assert "BLOCK" not in s.trace[-1].sent_text()
        s.start(1, lambda: conns[1].xadd(stream, {"item": "job"}), "XADD")
        s.run_all(lambda current, ready: ready[-1])
        read = s.clients[0].outcome.value
        entries = next(iter(read.values()))[0] if isinstance(read, dict) else read[0][1]
        assert entries[0][1] == {b"item": b"job"}
        s.start(0, lambda: conns[0].xread({stream: "$"}, count=1, block=2_000), "XREAD 2 s, nothing new")
        began = gating.REAL_MONOTONIC()
        s.run_all(lambda current, ready: ready[0])
        assert s.clients[0].outcome.ok and not s.clients[0].outcome.value
        assert s.vclock >= 2 and gating.REAL_MONOTONIC() - began < 2
    for c in conns:
        c.close()


def test_polled_names_what_blocks():
    assert gating.polled(("BLMOVE", "a", "b", "RIGHT", "LEFT", 5)) == (
        5.0,
        ("LMOVE", "a", "b", "RIGHT", "LEFT"),
    )
    assert gating.polled(("XREADGROUP", b"GROUP", "g", "c", b"BLOCK", "250", b"STREAMS", "s", ">")) == (
        0.25,
        ("XREADGROUP", b"GROUP", "g", "c", b"STREAMS", "s", ">"),
    )
    # a key or an id that reads "block", after STREAMS, is no option; XADD and XREAD without BLOCK pass
    assert gating.polled(("XREAD", "STREAMS", "block", "0")) is None
    assert gating.polled(("XADD", "s", "*", "f", "v")) is None
    assert gating.nothing_yet([]) and gating.nothing_yet(None) and not gating.nothing_yet(b"")


def test_third_party_code_redis_py_lock(contend_target, ns):
    """redis-py's own Lock, unmodified: blocking acquire with sleeps and a Lua release."""
    conns = clients(contend_target, 2)
    key = ns.key("lock")
    locks = [c.lock(key, timeout=10, sleep=0.1, blocking_timeout=5) for c in conns]
    order = []

    def critical(i):
        with locks[i]:
            order.append(("in", i))
            order.append(("out", i))

    with Scheduler() as s:
        for c in conns:
            s.add_client(connection=c)
        for i in range(2):
            s.start(i, lambda i=i: critical(i), "with lock")
        s.run_all(RandomWalk(seed=7))
        assert all(c.outcome.ok for c in s.clients)
    assert order in (
        [("in", 0), ("out", 0), ("in", 1), ("out", 1)],
        [("in", 1), ("out", 1), ("in", 0), ("out", 0)],
    )
    for c in conns:
        c.close()


def test_a_crashed_client_sends_nothing_more(contend_target, ns):
    conns = clients(contend_target, 1)
    key = ns.key("k")

    def with_cleanup():
        try:
            conns[0].set(key, "taken")
            conns[0].set(ns.key("after"), "never")
        finally:
            conns[0].delete(key)  # a dead process runs no finally block

    with Scheduler() as s:
        s.add_client(connection=conns[0])
        s.start(0, with_cleanup, "set, then clean up")
        s.step(0)
        s.crash(0)
        assert s.runnable() == []
        with pytest.raises(SchedulerError, match="crashed, not idle"):
            s.start(0, lambda: None, "again")
    assert conns[0].get(key) == b"taken"
    assert conns[0].get(ns.key("after")) is None
    conns[0].close()


def test_skewed_wall_clock(contend_target):
    conns = clients(contend_target, 2)
    with Scheduler() as s:
        for c in conns:
            s.add_client(connection=c)
        s.skew(1, 100)
        for i in range(2):
            s.start(i, time.time, "time.time()")
        assert s.clients[1].outcome.value - s.clients[0].outcome.value == pytest.approx(100)
    for c in conns:
        c.close()


def test_replay_that_diverges_says_so(contend_target, ns):
    with pytest.raises(ReplayDiverged, match="names client 5"):
        register_race(contend_target, ns, LuaRegistry, ReplayChooser([5]))


def test_pct_and_random_walk_are_deterministic_per_seed(contend_target, ns):
    for chooser_for in (lambda: PCTChooser(2, depth=2, max_steps=8, seed=3), lambda: RandomWalk(seed=3)):
        first = register_race(contend_target, ns, NaiveRegistry, chooser_for(), name="p")
        again = register_race(contend_target, ns, NaiveRegistry, chooser_for(), name="q")
        assert first[2] == again[2]


def test_bounded_preemption_finds_the_race_and_clears_lua(contend_target, ns):
    fresh = iter(range(10_000))

    def failures(cls, bound):
        search = BoundedPreemption(bound)
        bad = runs = 0
        while (chooser := search.next_run()) is not None:
            outcomes, _, _ = register_race(contend_target, ns, cls, chooser, name=f"n{next(fresh)}")
            runs += 1
            values = {o.value for o in outcomes}
            bad += any(o.error for o in outcomes) or len(values) != 1
        return bad, runs

    assert failures(NaiveRegistry, 0) == (0, 2)  # no preemption: c0 then c1, or c1 then c0
    bad, runs = failures(NaiveRegistry, 1)
    assert bad >= 1 and runs > 1
    assert failures(LuaRegistry, 2)[0] == 0


def test_uninstrumented_threads_pass_through(contend_target):
    conn = contend_target.client()
    with Scheduler():
        assert conn.ping()  # the test's own thread is no scheduled client
    conn.close()


def test_a_client_blocked_elsewhere_is_reported(contend_target):
    import threading

    blocker = threading.Lock()
    blocker.acquire()
    with Scheduler(yield_timeout=0.5) as s:
        s.add_client()
        with pytest.raises(SchedulerError, match="did not reach its next round trip"):
            s.start(0, blocker.acquire, "wait on a threading.Lock")
        blocker.release()


def test_an_event_wait_is_virtual(contend_target):
    import threading

    never = threading.Event()
    with Scheduler() as s:
        s.add_client()
        s.start(0, lambda: never.wait(30), "wait 30 s for an event nobody sets")
        s.run_all(lambda current, ready: ready[0])
        assert s.clients[0].outcome.value is False
        assert 30 <= s.vclock < 31  # 30 virtual seconds passed, in polls of the event


def test_a_thread_pool_runs_inline_in_a_scheduled_client(contend_target, ns):
    from concurrent.futures import ThreadPoolExecutor

    conn = contend_target.client()
    conn.ping()
    with Scheduler() as s, ThreadPoolExecutor(2) as pool:
        s.add_client(connection=conn)
        s.start(
            0,
            lambda: [f.result() for f in [pool.submit(conn.incr, ns.key("n")) for _ in range(2)]],
            "fan out",
        )
        s.run_all(lambda current, ready: ready[0])
        assert s.clients[0].outcome.value == [1, 2]
        assert sum(1 for step in s.trace if step.sent) == 2  # both INCRs were steps of the client
    conn.close()


def test_as_completed_yields_inline_futures_in_the_order_they_were_submitted(contend_target, ns):
    """A quorum loop (pottery's Redlock) reads `as_completed` over a set of futures and stops at
    a majority: in a set's order (by id) it looked at another master's reply, and raised or
    logged, on one run and not on the next, on the same schedule (Hypothesis's
    FlakyStrategyDefinition on the scoreboard's pottery-3 row)."""
    import concurrent.futures
    from concurrent.futures import ThreadPoolExecutor

    conn = contend_target.client()
    conn.ping()
    seen: list[list[int]] = []

    def fan_out() -> list[int]:
        with ThreadPoolExecutor(2) as pool:
            futures = {pool.submit(lambda i=i: i) for i in range(40)}
            conn.incr(ns.key("n"))  # a round trip: the client is scheduled
            # The set's own order is not the submission order (40 ids: it never is, by chance).
            seen.append([f.result() for f in futures])
            return [f.result() for f in concurrent.futures.as_completed(futures)]

    with Scheduler() as s:
        s.add_client(connection=conn)
        s.start(0, fan_out, "fan out")
        s.run_all(lambda current, ready: ready[0])
        assert s.clients[0].outcome.value == list(range(40))
    assert seen[0] != list(range(40)), "the set iterated in submission order: the test forces nothing"
    conn.close()


def test_pubsub_waits_are_virtual(contend_target, ns):
    conn = contend_target.client()
    conn.ping()
    pubsub = conn.pubsub()
    with Scheduler() as s:
        s.add_client(connection=conn)

        def listen() -> object:
            pubsub.subscribe(ns.key("ch"))
            pubsub.get_message(timeout=1)  # the subscribe confirmation
            return pubsub.get_message(timeout=5)  # nothing is published: 5 virtual seconds

        s.start(0, listen, "listen")
        s.run_all(lambda current, ready: ready[0])
        assert s.clients[0].outcome.error is None and s.clients[0].outcome.value is None
        assert s.vclock >= 5
    pubsub.close()
    conn.close()


def test_a_subscribe_confirmation_late_in_real_time_is_still_read(contend_target, ns):
    """The server answers a SUBSCRIBE late (CLIENT PAUSE, as a busy machine would): the poll
    waits for the confirmation it is owed instead of taking "not yet" for "no message"."""
    conn, admin = contend_target.client(), contend_target.client()
    pubsub = conn.pubsub()
    pubsub.subscribe(ns.key("warm"))  # the connection exists before the pause
    assert pubsub.get_message(timeout=5) is not None
    with Scheduler() as s:
        s.add_client(connection=conn)

        def listen() -> object:
            pubsub.subscribe(ns.key("ch"))
            return pubsub.get_message(timeout=1)

        admin.execute_command("CLIENT", "PAUSE", "300", "ALL")
        s.start(0, listen, "listen")
        s.run_all(lambda current, ready: ready[0])
        got = s.clients[0].outcome.value
        assert got is not None and got["type"] == "subscribe", got
    pubsub.close()
    conn.close()
    admin.close()


def test_the_gate_reads_what_a_round_trip_sends():
    assert decode_packed([b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"]) == [["GET", "k"]]
    conn = redis.connection.Connection()
    packed = conn.pack_commands([("MULTI",), ("SET", "k", "v", "NX"), ("EXEC",)])
    assert decode_packed(packed) == [["MULTI"], ["SET", "k", "v", "NX"], ["EXEC"]]


@pytest.mark.parametrize("version", ["5.3.1", "8.2.0", "9.0.0", "garbage"])
def test_a_redis_py_the_gate_was_not_written_for_is_refused(version):
    with pytest.raises(gate.UnsupportedRedisPy, match=r"pip install 'redis>=\d+\.\d+,<\d+\.\d+'") as info:
        gate.check_redis_py(version)
    assert version in str(info.value)


def test_the_installed_redis_py_is_supported():
    gate.check_redis_py()  # what CI installs is inside the range pyproject.toml pins


# A reply lost after the server ran the round trip ---------------------------------------------
def _run(s, index, lose):
    s.step(index, lose=lose)
    while index in s.runnable():
        s.step(index)
    return s.clients[index].outcome


@pytest.mark.parametrize(
    ("kind", "raised"),
    [(gating.LostReply.CONNECTION, redis.ConnectionError), (gating.LostReply.TIMEOUT, redis.TimeoutError)],
)
def test_a_lost_reply_leaves_the_effect_on_the_server_and_an_error_in_the_client(
    contend_target, ns, kind, raised
):
    (conn,) = clients(contend_target, 1)  # from_url: redis-py's Retry resends nothing
    key = ns.key("n")
    with Scheduler() as s:
        s.add_client(connection=conn)
        s.start(0, lambda: conn.incr(key), "incr")
        outcome = _run(s, 0, kind)
        trace = s.format_trace()
    assert isinstance(outcome.error, raised) and "was lost" in str(outcome.error)
    assert contend_target.client().get(key) == b"1"  # the server ran it once
    assert f"INCRBY {key} 1  →  1  ✗ reply lost: the client saw {kind.value}" in trace


@pytest.mark.parametrize("cached", [False, True])
def test_a_lost_reply_to_a_script_the_server_had_not_cached_is_the_loaded_scripts(contend_target, ns, cached):
    """NOSCRIPT runs nothing: the loss goes to the script sent again once loaded, in the same
    step, so a cold cache and a warm one give the same effect, error and steps."""
    (conn,) = clients(contend_target, 1)
    key = ns.key("n")
    script = conn.register_script(f"-- {key}\nreturn redis.call('INCR', KEYS[1])")  # a new SHA1
    if cached:
        contend_target.client().script_load(script.script)
    with Scheduler() as s:
        s.add_client(connection=conn)
        s.start(0, lambda: script(keys=[key]), "incr")
        outcome = _run(s, 0, gating.LostReply.TIMEOUT)
        steps = [step for step in s.trace if step.sent]
    assert isinstance(outcome.error, redis.TimeoutError) and "was lost" in str(outcome.error)
    assert contend_target.client().get(key) == b"1"  # the server ran it once
    assert len(steps) == 1 and steps[0].lost == "TimeoutError"


def test_a_lost_transaction_reply_is_resent_by_the_clients_retry_and_runs_twice(contend_target, ns):
    """redis-py's Retry resends MULTI/EXEC after a lost reply: the trace says who resent it."""
    from redis.backoff import ExponentialWithJitterBackoff
    from redis.retry import Retry

    conn = redis.Redis.from_url(contend_target.url, retry=Retry(ExponentialWithJitterBackoff(1, 0.01), 3))
    conn.ping()
    key = ns.key("m")

    def transfer():
        with conn.pipeline() as pipe:
            pipe.incr(key)
            return pipe.execute()

    with Scheduler() as s:
        s.add_client(connection=conn)
        s.start(0, transfer, "tx")
        outcome = _run(s, 0, gating.LostReply.TIMEOUT)
        resent = [step for step in s.trace if step.resend_of is not None]
    assert outcome.value == [2]  # the code saw the resend's reply, not a lost one
    assert contend_target.client().get(key) == b"2"  # the transaction ran twice
    assert len(resent) == 1 and resent[0].resent_by.startswith("redis-py's Retry")
    assert s.trace[resent[0].resend_of].lost == "TimeoutError"


def test_code_that_catches_a_lost_reply_and_sends_again_is_named_as_the_sender(contend_target, ns):
    (conn,) = clients(contend_target, 1)
    key = ns.key("n")

    def incr_until_answered():
        for _ in range(3):
            try:
                return conn.incr(key)
            except redis.ConnectionError:
                continue
        return None

    with Scheduler() as s:
        s.add_client(connection=conn)
        s.start(0, incr_until_answered, "incr")
        outcome = _run(s, 0, gating.LostReply.CONNECTION)
        (resent,) = [step for step in s.trace if step.resend_of is not None]
    assert outcome.value == 2 and resent.resent_by == "the code"


def test_only_a_round_trip_can_lose_its_reply(contend_target, ns):
    (conn,) = clients(contend_target, 1)
    with Scheduler() as s:
        s.add_client(connection=conn)
        s.start(0, lambda: time.sleep(1), "sleep")
        with pytest.raises(SchedulerError, match="no round trip to lose"):
            s.step(0, lose=gating.LostReply.CONNECTION)


def test_the_next_operation_sending_the_same_command_is_no_resend(contend_target, ns):
    """An operation loses a reply and raises; the next one sends the same command: no resend (a
    lost round trip is resent within the operation that lost it, or not at all)."""
    (conn,) = clients(contend_target, 1)
    key = ns.key("o")
    with Scheduler() as s:
        s.add_client(connection=conn)
        s.start(0, lambda: conn.incr(key), "incr")
        first = _run(s, 0, gating.LostReply.CONNECTION)
        s.start(0, lambda: conn.incr(key), "incr again")
        second = _run(s, 0, None)
        resent = [step for step in s.trace if step.resend_of is not None]
    assert isinstance(first.error, redis.ConnectionError) and second.value == 2
    assert resent == []


def test_a_wall_clock_imported_by_name_is_skewed_too(contend_target, monkeypatch):
    """`from time import time_ns` (pyrate-limiter's RedisBucket.now) reads the virtual wall clock
    while the gate is on, and the real one again after: a library that bound the real reader when
    it was imported would otherwise see none of the time the machines let pass."""
    import sys
    import types

    library = types.ModuleType("contend_test_by_name_clock")
    library.time_ns = time.time_ns  # what `from time import time_ns` leaves in a module
    library.time = time.time
    monkeypatch.setitem(sys.modules, library.__name__, library)
    conns = clients(contend_target, 2)
    with Scheduler() as s:
        for c in conns:
            s.add_client(connection=c)
        s.skew(1, 100)
        for i in range(2):
            s.start(i, lambda: (library.time_ns(), library.time()), "time_ns(), time()")
        (ns0, t0), (ns1, t1) = (s.clients[i].outcome.value for i in range(2))
        assert (ns1 - ns0) / 1e9 == pytest.approx(100, abs=0.01)
        assert t1 - t0 == pytest.approx(100, abs=0.01)
    assert library.time_ns is time.time_ns and library.time is time.time
    for c in conns:
        c.close()


def test_time_ns_counts_virtual_milliseconds_exactly(contend_target):
    """A millisecond of virtual time is a million nanoseconds of `time.time_ns()`: read through a
    float of 1.7e9 s it came out as 999,936 ns, and a limiter that floors to milliseconds
    (pyrate-limiter) saw no time pass."""
    conns = clients(contend_target, 1)
    with Scheduler() as s:
        s.add_client(connection=conns[0])
        s.start(0, time.time_ns, "time_ns()")
        first = s.clients[0].outcome.value
        s.advance(0.001)
        s.start(0, time.time_ns, "time_ns()")
        assert s.clients[0].outcome.value - first == 1_000_000
    conns[0].close()


def test_a_log_record_is_not_the_code_reading_its_wall_clock():
    """logging stamps each record with time.time(): a client that only logs has not read its wall
    clock (the clock-skew rules stay off for it), one that calls time.time() has."""
    logger = logging.getLogger("contend.tests.wall-clock")
    with Scheduler() as s:
        s.add_client()
        s.add_client()
        s.start(0, lambda: logger.warning("a lost reply, retried"), "logs")
        s.start(1, time.time, "reads the clock")
        s.run_all(lambda current, ready: ready[0])
        assert [c.read_wall_clock for c in s.clients] == [False, True]
