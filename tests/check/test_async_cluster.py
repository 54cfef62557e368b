"""redis.asyncio implementations on a Redis Cluster: redis.asyncio cluster clients on the run's
hash-tagged keys, cross-slot refusals named, one scheduler step per round trip (the cluster's
discovery is none), and the async catalog's verdicts as on one server."""

from __future__ import annotations

import asyncio

import pytest
import redis.asyncio.cluster

from contend.cli import main
from contend.impl.locks import async_token
from contend.schedule.scheduler import Scheduler
from contend.servers.cluster_client import CrossSlotError, refusals_count, refusals_since
from contend.servers.target import open_target


@pytest.fixture(scope="module")
def cluster_target():
    with open_target(cluster=3) as target:
        yield target


def check(capsys, target, *args: str) -> tuple[int, str]:
    code = main(["check", "--redis-url", target.url, *args])
    return code, " ".join(capsys.readouterr().out.split())


def test_async_clients_are_cluster_clients_on_the_tagged_namespace(cluster_target):
    client = cluster_target.client()
    ns = cluster_target.namespace(client=client)

    async def write() -> set[int]:
        conn = cluster_target.async_client()
        try:
            assert isinstance(conn, redis.asyncio.cluster.RedisCluster)
            keys = [ns.key("k", n) for n in range(40)]
            for key in keys:
                await conn.set(key, 1)
            lock = async_token.factory(conn, ns.key("lock"), 10_000)
            assert await lock.acquire(blocking=False)
            return {conn.get_node_from_key(key).port for key in keys}
        finally:
            await conn.aclose()

    try:
        assert len(asyncio.run(write())) == 3, "the keys spread over the masters"
        assert ns.count() == 41 and ns.cleanup() == 41 and ns.count() == 0
    finally:
        ns.cleanup()
        client.close()


def test_an_async_command_spanning_slots_is_refused_naming_its_keys_even_as_the_first(cluster_target):
    mark = refusals_count()

    async def refused() -> list[CrossSlotError]:
        conn = cluster_target.async_client()
        errors = []
        try:
            for call in (
                lambda: conn.eval("return 1", 2, "a-key", "another-key"),  # before it knew the cluster
                lambda: conn.mget("a-key", "another-key"),
            ):
                with pytest.raises(CrossSlotError) as info:
                    await call()
                errors.append(info.value)
        finally:
            await conn.aclose()
        return errors

    errors = asyncio.run(refused())
    assert [e.command for e in errors] == ["EVAL", "MGET"]
    assert [k.key for k in errors[0].keys] == ["a-key", "another-key"] and "hash tag" in str(errors[0])
    assert refusals_since(mark) == [e.refusal for e in errors], (
        "noted for the checks, as the sync client's are"
    )


def test_a_scheduled_async_cluster_client_takes_one_step_per_round_trip(cluster_target):
    client = cluster_target.client()
    ns = cluster_target.namespace(client=client)
    try:
        with Scheduler() as s:
            conns = [cluster_target.async_client() for _ in range(2)]
            for conn in conns:
                s.add_client(connection=conn)
            # Two locks whose keys live on two masters: the trace names each step's node.
            keys = [ns.key("lock", n) for n in range(10)]
            ports = {client.get_node_from_key(k).port: k for k in keys}
            first, second = list(ports.values())[:2]
            held = async_token.factory(conns[0], first, 10_000)
            waiter = async_token.factory(conns[1], second, 10_000)
            for label, operation in (("acquire()", held.acquire), ("release()", held.release)):
                s.start(0, operation, label)
                steps = 0
                while not s.idle(0):
                    s.step(0)
                    steps += 1
                assert steps == 1, f"{label}: the discovery and a script's loading are no steps"
                assert s.clients[0].outcome.error is None
            s.start(1, lambda: waiter.acquire(blocking=False), "acquire()")
            s.step(1)
            assert s.idle(1) and s.clients[1].outcome.value is True
            s.start(1, waiter.release, "release()")
            s.crash(1)  # before its compare-and-delete: its connections close on its own loop
            trace = s.format_trace()
        assert f"@127.0.0.1:{client.get_node_from_key(first).port}" in trace
        assert f"@127.0.0.1:{client.get_node_from_key(second).port}" in trace
        assert "CLUSTER SLOTS" not in trace and "COMMAND" not in trace
        for conn in conns:  # closed with the scheduler, on each client's loop
            nodes = [*conn.get_nodes(), *conn.nodes_manager.startup_nodes.values()]
            assert not any(c.is_connected for node in nodes for c in node._connections)
        assert client.exists(second) == 1, "the crashed holder's lease stays until its TTL"
    finally:
        ns.cleanup()
        client.close()


@pytest.mark.slow
def test_the_async_locks_get_their_one_server_verdicts(capsys, cluster_target):
    code, out = check(
        capsys,
        cluster_target,
        *("--only", "async_token", "--only", "async_early_clear"),
        *("--check", "burst", "--check", "expiry", "--check", "crash", "--check", "cancel"),
        *("--check", "bad-input"),
    )
    assert code == 0, out
    assert "all as expected: 1 correct passed, 1 known-bad caught" in out
    assert "release() cancelled before its command is sent, at round trip 1 of 1" in out
    assert "SET {contend:" in out, "the lock's key is a hash tag as a whole"


def test_the_async_registries_get_their_one_server_verdicts(capsys, cluster_target):
    code, out = check(
        capsys,
        cluster_target,
        *("--only", "async_lua", "--only", "async_check_then_set"),
        *("--check", "burst-one-name", "--check", "bad-input"),
    )
    assert code == 0, out
    assert "all as expected: 1 correct passed, 1 known-bad caught" in out
    assert "tasks registering 'hot-0' at once" in out and "raised RegistrationError" in out


@pytest.mark.slow
def test_the_async_state_machines_run_on_a_cluster(capsys, cluster_target):
    args = ("--check", "schedule", "--schedule-examples", "10")
    code, out = check(capsys, cluster_target, "--only", "async_token", "--only", "async_lua", *args)
    assert code == 0 and "all as expected: 2 correct passed" in out, out
    bad = ("--only", "async_early_clear", "--only", "async_check_then_set", "--no-shrink")
    code, out = check(capsys, cluster_target, *bad, *args)
    assert code == 0 and "all as expected: 0 correct passed, 2 known-bad caught" in out, out


def test_user_async_code_runs_on_a_cluster_and_keys_spanning_slots_are_named(capsys, cluster_target):
    spec = ("--impl", "tests.fixtures.async_foreign.redispy_lock:make", "--kind", "lock")
    code, out = check(capsys, cluster_target, *spec, "--check", "cancel")
    assert code == 0 and "as expected: 1 correct passed" in out, out
    spec = ("--impl", "tests.fixtures.async_foreign.held_set_lock:make", "--kind", "lock")
    code, out = check(capsys, cluster_target, *spec, "--check", "burst")
    assert code == 1, out
    assert "hygiene: cluster-slots" in out and "EVALSHA spans hash slots on a Redis Cluster" in out
    assert main(["check", *spec, "--check", "burst"]) == 0, "it passes on one server"
