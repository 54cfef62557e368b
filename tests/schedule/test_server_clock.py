"""One clock: the server keeps the scheduler's virtual time, for every shape of code that reads it.

Each test forces its schedule (no search, no real-time wait): a lease is written at a known
virtual instant, the clock is moved to just before and just after its end, and the server is
asked. Every lease lapses at its TTL, to the millisecond of virtual time.
"""

from __future__ import annotations

import threading
import time

import pytest
import redis

from contend.schedule import Scheduler

TTL_MS = 2000

#: A semaphore slot scored by the server's clock: KEYS[1] the slots (a sorted set), ARGV[1] the
#: lease in ms, ARGV[2] the holder, ARGV[3] the limit. Drops slots whose score (their end, in ms
#: of the server's TIME) has passed, then takes one if there is room: 1 if taken, else 0.
TIME_SCORED_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[3]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[1]), ARGV[2])
  return 1
end
return 0
"""


def run_alone(s: Scheduler, index: int, operation, label: str = "op", max_steps: int = 2000):
    """Run `operation` on client `index` to its end; its outcome and the virtual time of its last step."""
    s.start(index, operation, label)
    last = s.vclock
    for _ in range(max_steps):
        if s.idle(index) or index not in s.runnable():
            break
        last = s.step(index).vtime
    assert s.idle(index), f"{label} did not end within {max_steps} steps"
    return s.clients[index].outcome, last


@pytest.fixture
def scheduled(contend_target):
    """A scheduler on the test's server clock, with two clients of their own."""
    assert contend_target.clock is not None, "contend starts this server: it keeps the run's clock"
    conns = [contend_target.client() for _ in range(2)]
    for conn in conns:
        conn.ping()
    with Scheduler(clock=contend_target.clock) as s:
        for conn in conns:
            s.add_client(connection=conn)
        yield s, conns
    for conn in conns:
        conn.close()


def lapses_at(s: Scheduler, written_at: float, still_there, seconds: float = TTL_MS / 1000) -> None:
    """The lease written at virtual time `written_at` is there 1 ms before its end and at it, and
    gone 1 ms after (`still_there()` asks the server, outside the schedule)."""
    s.advance(written_at + seconds - 0.001 - s.vclock)
    assert still_there(), f"gone 1 ms before its {seconds:g} s end"
    s.advance(0.001)
    assert still_there(), "gone at its end: Redis expires a key once its time is past"
    s.advance(0.001)
    assert not still_there(), f"still there 1 ms after its {seconds:g} s end"


def test_a_ttl_lease_lapses_at_its_ttl(scheduled, ns):
    s, conns = scheduled
    key = ns.key("lease")
    outcome, written = run_alone(s, 0, lambda: conns[0].set(key, "a", nx=True, px=TTL_MS), "acquire")
    assert outcome.value is True
    assert conns[1].pttl(key) == TTL_MS - round((s.vclock - written) * 1000)
    lapses_at(s, written, lambda: conns[1].exists(key) == 1)


def test_a_pxat_lease_from_the_clients_clock_lapses_at_its_end(scheduled, ns):
    s, conns = scheduled
    key = ns.key("lease")

    def acquire() -> bool:
        return bool(conns[0].set(key, "a", nx=True, pxat=int(time.time() * 1000) + TTL_MS))

    outcome, written = run_alone(s, 0, acquire, "acquire")
    assert outcome.value is True
    lapses_at(s, written, lambda: conns[1].exists(key) == 1)


def test_a_time_scored_slot_in_a_script_lapses_at_its_lease(scheduled, ns):
    s, conns = scheduled
    key = ns.key("slots")
    acquire = [conn.register_script(TIME_SCORED_ACQUIRE) for conn in conns]  # EVALSHA, as redis-py sends
    outcome, written = run_alone(s, 0, lambda: acquire[0]([key], [TTL_MS, "a", 1]), "acquire a")
    assert outcome.value == 1
    s.advance(written + TTL_MS / 1000 - 0.001 - s.vclock)
    refused, _ = run_alone(s, 1, lambda: acquire[1]([key], [TTL_MS, "b", 1]), "acquire b")
    assert refused.value == 0, "a slot was free 1 ms before the holder's lease ended"
    s.advance(written + TTL_MS / 1000 - s.vclock)
    granted, at = run_alone(s, 1, lambda: acquire[1]([key], [TTL_MS, "b", 1]), "acquire b")
    assert granted.value == 1 and at == pytest.approx(written + TTL_MS / 1000, abs=0.0015)


def test_a_5ms_poller_gets_a_2s_lease_when_it_lapses(scheduled, ns):
    s, conns = scheduled
    key = ns.key("lease")
    held, written = run_alone(s, 0, lambda: conns[0].set(key, "a", nx=True, px=TTL_MS), "holder")
    assert held.value is True

    def poll() -> int:
        polls = 0
        while True:
            polls += 1
            if conns[1].set(key, "b", nx=True, px=TTL_MS):
                return polls
            time.sleep(0.005)

    got, at = run_alone(s, 1, poll, "poller", max_steps=1000)
    assert got.ok and at >= written + TTL_MS / 1000
    # Granted on its first poll after the lease lapsed: within one poll interval and one step.
    assert at - (written + TTL_MS / 1000) <= 0.005 + 0.001 + 1e-9
    assert conns[0].get(key) == b"b"


def test_every_example_starts_the_servers_at_the_same_instant(contend_target):
    clock = contend_target.clock
    conn = contend_target.client()
    seen = []
    for _ in range(2):
        with Scheduler(clock=clock) as s:
            s.add_client(connection=conn)
            s.advance(1.5)
            seen.append(conn.time())
    conn.close()
    assert seen[0] == seen[1] == (int(clock.epoch + 1.5), 500_000)


def test_the_server_keeps_real_time_again_once_the_scheduler_closes(contend_target):
    conn = contend_target.client()
    with Scheduler(clock=contend_target.clock) as s:
        s.advance(3600)
        assert conn.time()[0] == int(contend_target.clock.epoch + 3600)
    server, _ = conn.time()
    conn.close()
    assert abs(server - time.time()) < 5


def test_a_server_contend_did_not_start_keeps_its_own_time(contend_target):
    """A Scheduler without a clock (a --redis-url server) moves only the clients' time."""
    conn = redis.Redis.from_url(contend_target.url)
    with Scheduler() as s:
        s.advance(3600)
        server, _ = conn.time()
    conn.close()
    assert abs(server - time.time()) < 5


def test_a_thread_the_code_starts_runs_on_the_same_clock(scheduled, ns):
    """A leader's heartbeat (a thread its code starts) is a client of its own: it renews the lease
    every third of it on the virtual clock, one round trip a step, so the lease outlives three
    TTLs of work; joining it waits on the virtual clock too."""
    s, conns = scheduled
    key = ns.key("lease")

    def lead() -> int:
        assert conns[0].set(key, "a", nx=True, px=TTL_MS)
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(TTL_MS / 3000):
                conns[0].pexpire(key, TTL_MS)

        beat = threading.Thread(target=heartbeat, name="heartbeat", daemon=True)
        beat.start()
        time.sleep(3 * TTL_MS / 1000)  # the work: three TTLs
        held = conns[0].get(key)
        stop.set()
        beat.join()
        return held

    started = time.perf_counter()
    outcome, _ = run_alone_with_threads(s, 0, lead)
    assert outcome.value == b"a", "the lease ran out although its heartbeat renewed it"
    assert s.vclock >= 3 * TTL_MS / 1000 and time.perf_counter() - started < 5
    beats = [step for step in s.trace if step.client == "c0.t1" and step.sent]
    assert len(beats) >= 8 and all(step.sent[0][0] == "PEXPIRE" for step in beats)
    assert s.clients[2].ended and s.clients[2].adopted


def test_a_crash_takes_the_threads_its_code_started(scheduled, ns):
    s, conns = scheduled
    key = ns.key("lease")

    def lead() -> None:
        stop = threading.Event()

        def heartbeat() -> None:
            while not stop.wait(0.5):
                conns[0].pexpire(key, TTL_MS)

        threading.Thread(target=heartbeat, daemon=True).start()
        time.sleep(10)

    s.start(0, lead, "lead")
    s.step(2)  # the heartbeat runs to its first wait
    s.crash(0)
    assert s.clients[2].crashed and not s.runnable()


def run_alone_with_threads(s: Scheduler, index: int, operation, max_steps: int = 2000):
    """Run `operation` on client `index`, stepping it and the threads its code starts, to its end."""
    s.start(index, operation, "op")
    for _ in range(max_steps):
        ready = s.runnable()
        if s.idle(index) or not ready:
            break
        s.step(index if index in ready else ready[0])
    assert s.idle(index)
    return s.clients[index].outcome, s.vclock
