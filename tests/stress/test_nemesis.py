"""The nemesis: each fault does what it says, records start and stop, and is always healed."""

from __future__ import annotations

import multiprocessing
import subprocess
import time
from pathlib import Path

import pytest
import redis

from contend.errors import ContendError
from contend.servers.deployment import Deployment
from contend.stress.board import Board, Field, WorkerPhase
from contend.stress.nemesis import (
    ClientPause,
    Nemesis,
    NemesisContext,
    ServerKill,
    ServerPause,
    parse_nemeses,
)
from tests.servers.test_server import wait_gone


def state(pid: int) -> str:
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]


def make_context(
    deployment: Deployment | None, pids: list[int], **kw
) -> tuple[NemesisContext, list[tuple[str, str]]]:
    events: list[tuple[str, str]] = []
    board = Board.create(multiprocessing.get_context("spawn"), max(1, len(pids)), "redis://127.0.0.1:1/0")
    ctx = NemesisContext(
        deployment=deployment,  # type: ignore[arg-type]
        board=board,
        pids=pids,
        record=lambda f, text: events.append((f, text)),
        **kw,
    )
    return ctx, events


@pytest.fixture
def sleeper():
    """A process to stop and resume, standing in for a worker."""
    proc = subprocess.Popen(["sleep", "60"])
    yield proc
    proc.kill()
    proc.wait()


@pytest.fixture
def deployment():
    c = Deployment().start()
    yield c
    c.stop()


def test_parse_nemeses():
    assert parse_nemeses(["client-pause,server-pause", "client-pause", " failover "]) == (
        "client-pause",
        "server-pause",
        "failover",
    )
    assert parse_nemeses(None) == () and parse_nemeses(["none"]) == ()
    with pytest.raises(ContendError, match="unknown nemesis 'split-brain': expected one of client-pause"):
        parse_nemeses(["split-brain"])
    with pytest.raises(ContendError, match="never kills a server it did not start"):
        parse_nemeses(["server-kill"], redis_url="redis://:secret@example.com:6379/0")
    with pytest.raises(ContendError) as info:
        parse_nemeses(["failover"], redis_url="redis://:secret@example.com:6379/0")
    assert "secret" not in str(info.value), "the password is masked"
    assert parse_nemeses(["client-pause", "server-pause"], redis_url="redis://h:6379/0")


def test_client_pause_stops_and_resumes_a_process(sleeper):
    ctx, events = make_context(None, [sleeper.pid], fault_ms=100)
    fault = ClientPause(ctx)
    assert fault.begin()
    assert state(sleeper.pid) == "T"
    assert not fault.due(time.monotonic_ns())
    time.sleep(0.12)
    assert fault.due(time.monotonic_ns())
    fault.end()
    assert state(sleeper.pid) in ("S", "R")
    assert [f for f, _ in events] == ["client-pause", "client-pause"]
    assert events[0][1].startswith(f"start: process 0 (pid {sleeper.pid}) stopped")
    assert events[1][1].startswith(f"stop: process 0 (pid {sleeper.pid}) resumed after")


def test_client_pause_of_a_lock_picks_a_holder_and_waits_for_another_writer(sleeper):
    ctx, events = make_context(None, [sleeper.pid], lock=True, ttl_ms=50)
    fault = ClientPause(ctx)
    ctx.board.set(0, Field.PHASE, WorkerPhase.IDLE)
    assert not fault.begin(), "nobody holds the lock: nothing to pause"
    ctx.board.set(0, Field.PHASE, WorkerPhase.HOLDING)
    assert fault.begin()
    assert "holding the lock before its write (TTL 50 ms)" in events[0][1]
    time.sleep(0.1)
    # Past the lease, but no other worker has written yet: stay stopped (up to the cap).
    assert not fault.due(time.monotonic_ns())
    assert fault.due(time.monotonic_ns() + 3_000_000_000)
    fault.heal()
    assert state(sleeper.pid) in ("S", "R")


def test_server_pause_sigstops_the_embedded_server(deployment):
    ctx, events = make_context(deployment, [], fault_ms=100)
    fault = ServerPause(ctx)
    client = redis.Redis.from_url(deployment.url, socket_timeout=0.2)
    try:
        assert fault.begin()
        assert deployment.primary is not None and state(deployment.primary.pid) == "T"
        with pytest.raises(redis.TimeoutError):
            client.ping()
        fault.end()
        client.connection_pool.disconnect()
        assert client.ping()
    finally:
        client.close()
    assert "stopped with SIGSTOP for 100 ms" in events[0][1] and "resumed after" in events[1][1]


def test_server_pause_on_a_url_is_client_pause(contend_target):
    deployment = Deployment(redis_url=contend_target.url).start()
    ctx, events = make_context(deployment, [], fault_ms=150)
    fault = ServerPause(ctx)
    client = contend_target.client(socket_timeout=2)
    try:
        assert fault.begin()
        started = time.monotonic()
        client.ping()  # waits for the pause to end by itself
        assert time.monotonic() - started > 0.05
        fault.end()
    finally:
        client.close()
    assert events[0][1] == "start: CLIENT PAUSE 150 (every client of the server waits)"


def test_server_kill_restarts_on_the_same_port_without_the_data(deployment):
    ctx, events = make_context(deployment, [], fault_ms=10)
    client = redis.Redis.from_url(deployment.url)
    client.set("k", "v")
    assert deployment.primary is not None
    old_pid, port = deployment.primary.pid, deployment.primary.port
    fault = ServerKill(ctx)
    assert fault.begin()
    assert wait_gone(old_pid)
    fault.end()
    assert deployment.primary.port == port and deployment.primary.pid != old_pid
    client.connection_pool.disconnect()
    assert client.get("k") is None
    client.close()
    assert "killed with SIGKILL" in events[0][1] and "persistence off: its data is gone" in events[1][1]
    assert set(deployment.pids()) == {old_pid, deployment.primary.pid}


def test_failover_promotes_a_replica_that_lacks_the_acknowledged_write():
    moved: list[str] = []
    deployment = Deployment(replica=True).start()
    deployment.on_move = moved.append
    try:
        assert deployment.primary is not None and deployment.replica is not None
        master = redis.Redis.from_url(deployment.url)
        master.set("before", 1)
        master.execute_command("WAIT", 1, 2000)  # replicated
        deployment.cut_replication()
        assert master.set("after", 1), "the master acknowledges the write"
        old_pid, new = deployment.promote()
        master.close()
        assert moved == [new.url] and deployment.primary is new
        assert wait_gone(old_pid)
        promoted = redis.Redis.from_url(new.url)
        assert promoted.get("before") == b"1"
        assert promoted.get("after") is None, "an acknowledged write was lost"
        assert promoted.info("replication")["role"] == "master"
        promoted.close()
        pids = deployment.pids()
    finally:
        deployment.stop()
    for pid in pids:
        assert wait_gone(pid)


def test_nemesis_runs_faults_in_turn_and_heals_on_demand(deployment, sleeper):
    ctx, events = make_context(deployment, [sleeper.pid], fault_ms=30)
    nemesis = Nemesis(["client-pause", "server-pause"], ctx, interval=0.01)
    now = time.monotonic_ns()
    nemesis.start(now, now + 10_000_000_000)
    deadline = time.monotonic() + 5
    while len(events) < 4 and time.monotonic() < deadline:
        nemesis.tick(time.monotonic_ns())
        time.sleep(0.005)
    assert [f for f, _ in events[:4]] == ["client-pause"] * 2 + ["server-pause"] * 2
    # Ctrl-C in the middle of a fault: heal resumes what is stopped, records nothing.
    while nemesis.active is None:
        nemesis.tick(time.monotonic_ns())
        time.sleep(0.005)
    assert deployment.primary is not None
    stopped = [state(sleeper.pid), state(deployment.primary.pid)]
    assert "T" in stopped
    recorded = len(events)
    nemesis.heal()
    assert state(sleeper.pid) != "T" and state(deployment.primary.pid) != "T"
    assert len(events) == recorded and nemesis.active is None


def test_no_fault_begins_that_would_not_fit_in_the_run(sleeper):
    ctx, events = make_context(None, [sleeper.pid], fault_ms=1000)
    nemesis = Nemesis(["client-pause"], ctx, interval=0.0)
    now = time.monotonic_ns()
    nemesis.start(now, now + 500_000_000)
    nemesis.tick(now + 1)
    assert nemesis.active is None and not events
