"""Refusals because of hash slots from the servers of a Redis Cluster, noted with the command and
each key's slot and node even when the code that met them swallowed the error: a script's
undeclared key ("non local key"), on a sync or an async client, alone or in a pipeline or
transaction, and TRYAGAIN during a migration that does not end."""

from __future__ import annotations

import asyncio
import contextlib

import pytest
import redis
from redis.exceptions import ClusterError

from contend.servers.cluster_client import refusals_count, refusals_since
from contend.servers.slot_refusals import TRYAGAIN, UNDECLARED
from contend.servers.target import open_target

# KEYS[1] = a key; ARGV[1] = another key (the mistake: not declared). Sets both.
SETS_TWO = "redis.call('SET', KEYS[1], 1)\nreturn redis.call('SET', ARGV[1], 1)"


@pytest.fixture(scope="module")
def cluster_target():
    with open_target(cluster=3) as target:
        yield target


@pytest.fixture
def cluster_client(cluster_target):
    client = cluster_target.client()
    yield client
    client.close()


def on_two_nodes(client) -> tuple[str, str]:
    """Two keys that the cluster serves from different nodes."""
    first = "{contend-test}:a"
    node = client.get_node_from_key(first).name
    other = next(
        f"contend-test:{n}" for n in range(100) if client.get_node_from_key(f"contend-test:{n}").name != node
    )
    return first, other


def test_a_scripts_undeclared_key_on_another_node_is_named_even_when_swallowed(cluster_client):
    declared, undeclared = on_two_nodes(cluster_client)
    mark = refusals_count()
    with contextlib.suppress(redis.ResponseError):  # what an implementation may do with it
        cluster_client.eval(SETS_TWO, 1, declared, undeclared)
    (refusal,) = refusals_since(mark)
    assert refusal.command == "EVAL" and refusal.shape == UNDECLARED
    assert [k.key for k in refusal.keys] == [declared] and [k.key for k in refusal.undeclared] == [undeclared]
    assert refusal.undeclared[0].node == cluster_client.get_node_from_key(undeclared).name
    assert refusal.undeclared[0].slot == cluster_client.keyslot(undeclared)
    text = str(refusal)
    assert "line 2 of the script (return redis.call('SET', ARGV[1], 1))" in text
    assert f"refused by the server at {cluster_client.get_node_from_key(declared).name}" in text
    assert "non local key" in text and "Error running script" not in text
    cluster_client.delete(declared)


def test_a_registered_scripts_text_is_found_for_its_evalsha(cluster_client):
    """Script objects run EVALSHA: the line is read off the text they loaded (or registered)."""
    declared, undeclared = on_two_nodes(cluster_client)
    script = cluster_client.register_script(SETS_TWO + "\n-- " + declared)  # a text no test ran yet
    mark = refusals_count()
    for _ in range(2):  # the first loads it (NOSCRIPT, SCRIPT LOAD), the second finds it loaded
        with contextlib.suppress(redis.ResponseError):
            script(keys=[declared], args=[undeclared])
    refused = refusals_since(mark)
    assert [r.command for r in refused] == ["EVALSHA", "EVALSHA"]
    assert all([k.key for k in r.undeclared] == [undeclared] for r in refused)
    cluster_client.delete(declared)


def test_an_async_clients_script_refusal_is_noted_with_the_sync_ones(cluster_target):
    client = cluster_target.client()
    declared, undeclared = on_two_nodes(client)
    client.close()

    async def run() -> None:
        conn = cluster_target.async_client()
        try:
            with contextlib.suppress(redis.ResponseError):
                await conn.eval(SETS_TWO, 1, declared, undeclared)
            await conn.delete(declared)
        finally:
            await conn.aclose()

    mark = refusals_count()
    asyncio.run(run())
    (refusal,) = refusals_since(mark)
    assert refusal.shape == UNDECLARED and [k.key for k in refusal.undeclared] == [undeclared]


def test_tryagain_during_a_migration_that_does_not_end_is_named(cluster_client):
    keys = ["{contend-moving}:a", "{contend-moving}:b"]
    slot = cluster_client.keyslot(keys[0])
    source = cluster_client.get_node_from_key(keys[0])
    dest = next(n for n in cluster_client.get_primaries() if n.name != source.name)
    src, dst = (redis.Redis(host=n.host, port=n.port) for n in (source, dest))
    src_id, dst_id = src.execute_command("CLUSTER MYID"), dst.execute_command("CLUSTER MYID")
    src.mset({k: 1 for k in keys})
    dst.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", src_id)
    src.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", dst_id)
    src.execute_command("MIGRATE", dest.host, dest.port, keys[0], 0, 5000)  # one key moved, one not
    mark = refusals_count()
    try:
        with pytest.raises(ClusterError, match="TTL exhausted"):
            cluster_client.mget(*keys)
        (refusal,) = refusals_since(mark)
        assert refusal.shape == TRYAGAIN and refusal.command == "MGET"
        assert [(k.key, k.slot) for k in refusal.keys] == [(k, slot) for k in keys]
        assert refusal.refused_by in (f"the server at {source.name}", f"the server at {dest.name}")
        assert "the migration did not end" in str(refusal)
    finally:
        with dst.pipeline(transaction=False) as pipe:  # the moved key, on the node importing it
            pipe.execute_command("ASKING").delete(keys[0]).execute()
        for node in (src, dst):  # the migration called off: the slot stays on the source
            node.execute_command("CLUSTER SETSLOT", slot, "STABLE")
        src.delete(keys[1])
        src.close()
        dst.close()
    after = refusals_count()
    assert cluster_client.mget(*keys) == [None, None] and refusals_since(after) == [], "once it ended"
