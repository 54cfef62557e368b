"""Running on a Redis Cluster: the target, its namespace, and keys that span hash slots named."""

from __future__ import annotations

import dataclasses
import json

import pytest
import redis.cluster
from redis.exceptions import CrossSlotTransactionError

from contend.cli import main
from contend.errors import TargetError
from contend.schedule.gating import LostReply
from contend.schedule.scheduler import Scheduler
from contend.servers.cluster_client import CrossSlotError, refusals_count, refusals_since
from contend.servers.target import connect_url, open_target


@pytest.fixture(scope="module")
def cluster_target():
    with open_target(cluster=3) as target:
        yield target


def test_the_target_gives_cluster_clients_and_a_tagged_namespace(cluster_target):
    assert cluster_target.cluster and cluster_target.url.startswith("redis+cluster://127.0.0.1:")
    assert "cluster (3 masters)" in cluster_target.description
    client = cluster_target.client()
    ns = cluster_target.namespace(client=client)
    try:
        assert isinstance(client, redis.cluster.RedisCluster)
        key = ns.key("lock")
        assert key == "{" + ns.prefix + ":lock}", "a key is a hash tag as a whole on a cluster"
        keys = [ns.key("k", n) for n in range(40)]
        for k in keys:
            client.set(k, 1)
        client.set(key + ":fence", 1)  # derived from a tagged key: the same slot
        assert client.keyslot(key + ":fence") == client.keyslot(key)
        assert len({client.get_node_from_key(k).port for k in keys}) == 3, "keys spread over the masters"
        assert ns.count() == 41
        assert ns.cleanup() == 41 and ns.count() == 0
    finally:
        ns.cleanup()
        client.close()


def test_an_existing_cluster_is_reached_by_its_url(cluster_target):
    found = connect_url(cluster_target.url)
    assert found.cluster and "cluster (3 masters)" in found.description


def test_a_single_server_is_not_a_cluster(contend_target):
    url = contend_target.url.replace("redis://", "redis+cluster://").removesuffix("/0")
    with pytest.raises(TargetError, match="cannot reach a Redis Cluster at"):
        connect_url(url)


def test_keys_in_two_slots_are_named_with_their_slots(cluster_target):
    client = cluster_target.client()
    try:
        with pytest.raises(CrossSlotError) as info:
            client.eval("return 1", 2, "a-key", "another-key")
        assert info.value.command == "EVAL"
        assert [k.key for k in info.value.keys] == ["a-key", "another-key"]
        text = str(info.value)
        node = client.get_node_from_key("a-key").name
        assert f"a-key (slot {client.keyslot('a-key')} on {node})" in text and "hash tag" in text
        assert "refused by redis-py, before sending it" in text
    finally:
        client.close()


def test_a_transaction_over_two_slots_is_noted_with_its_keys(cluster_target):
    """redis-py refuses it itself (CrossSlotTransactionError, which the implementation sees as
    is); contend notes it for the cluster-slots report, naming the keys."""
    client = cluster_target.client()
    mark = refusals_count()
    try:
        with pytest.raises(CrossSlotTransactionError):
            client.pipeline(transaction=True).set("a-key", 1).set("another-key", 2).execute()
        (refusal,) = refusals_since(mark)
        assert refusal.command == "MULTI/EXEC"
        assert [k.key for k in refusal.keys] == ["a-key", "another-key"]
        with pytest.raises(CrossSlotTransactionError):  # WATCH one slot, then write another
            client.transaction(lambda pipe: (pipe.multi(), pipe.set("another-key", 1)), "a-key")
        refusal = refusals_since(mark)[1]
        assert [k.key for k in refusal.keys] == ["a-key", "another-key"]
        client.transaction(lambda pipe: pipe.set("{a-key}:2", 1), "a-key")  # one slot: it runs
        assert len(refusals_since(mark)) == 2
    finally:
        client.delete("{a-key}:2")
        client.close()


@pytest.mark.slow
@pytest.mark.soak  # the whole catalog on a cluster; tests/check/test_cluster_refusals.py names keys by default
def test_check_on_a_cluster_skips_single_node_code_and_names_keys_that_span_slots(capsys, tmp_path):
    argv = [
        "check",
        "--cluster",
        "3",
        "--only",
        "token",
        "--only",
        "fenced",
        "--check",
        "model",
        "--check",
        "burst",
    ]
    assert main(argv) == 0, "a fencing key derived from a tagged key shares its slot"
    out = tmp_path / "check.json"
    argv = ["check", "--cluster", "3", "--family", "registry", "--check", "bad-input"]
    main([*argv, "--json", str(out), "-q"])  # bad-input alone catches no known-bad one: exit 1
    rows = {row["implementation"]: row for row in json.loads(out.read_text())["implementations"]}
    assert rows["lua"]["verdict"] == "pass" and rows["seed_layout"]["verdict"] == "skipped"
    assert "a Redis Cluster has database 0 only" in rows["seed_layout"]["skipped"]
    assert rows["async_lua"]["verdict"] == "pass", "async code runs on redis.asyncio cluster clients"
    chosen = ["check", "--cluster", "3", "--only", "async_token", "--check", "bad-input"]
    assert main(chosen) == 0, "an async implementation chosen by name runs on a cluster"
    capsys.readouterr()
    spec = ["--impl", "tests.fixtures.foreign.held_set_lock:make", "--kind", "lock", "--check", "burst"]
    assert main(["check", "--cluster", "3", *spec]) == 1
    text = " ".join(capsys.readouterr().out.split())
    assert "EVALSHA spans hash slots on a Redis Cluster" in text and ":held (slot" in text


def test_the_same_lock_passes_on_one_server(capsys):
    spec = ["--impl", "tests.fixtures.foreign.held_set_lock:make", "--kind", "lock", "--check", "burst"]
    assert main(["check", *spec]) == 0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cluster", "2"], "--cluster 2: a cluster needs 3 to 16 masters"),
        (["--cluster", "3", "--redis-url", "redis://127.0.0.1:1"], "give one of them"),
        (["--redis-url", "redis+cluster://127.0.0.1:1/2"], "a cluster has database 0 only"),
        (
            ["--cluster", "3", "--only", "seed_layout"],
            "seed_layout cannot run on a Redis Cluster: uses databases",
        ),
    ],
)
def test_bad_cluster_input_exits_2_before_anything_starts(argv, message, capsys):
    assert main(["check", *argv]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message in err and "Traceback" not in err


@pytest.mark.parametrize(("retries", "runs"), [(0, 1), (3, 2)])
def test_a_cluster_client_resends_a_lost_reply_as_client_retries_says(cluster_target, retries, runs):
    """RedisCluster resends 3 times by default; the clients contend hands code resend exactly
    `--client-retries` times there, as on one server (0: the code sees the ConnectionError)."""
    target = dataclasses.replace(cluster_target, client_retries=retries)
    conn = target.client()
    key = target.namespace(client=conn).key("n")
    conn.ping()
    with Scheduler() as s:
        s.add_client(connection=conn)
        s.start(0, lambda: conn.incr(key), "incr")
        s.step(0, lose=LostReply.CONNECTION)
        for _ in range(100):
            if 0 not in s.runnable():
                break
            s.step(0)
        outcome = s.clients[0].outcome
        resent = [step for step in s.trace if step.resend_of is not None]
    assert int(cluster_target.client().get(key)) == runs
    if retries:
        assert outcome.value == 2 and resent[0].resent_by.startswith("redis-py's Retry")
    else:
        assert isinstance(outcome.error, redis.ConnectionError) and not resent
