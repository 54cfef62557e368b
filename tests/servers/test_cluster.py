"""The embedded Redis Cluster: real cluster-mode nodes joined by contend, stopped with no orphan."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import redis

from contend.cli import main
from contend.servers.cluster import SLOTS, EmbeddedCluster, check_size
from tests.servers.test_server import wait_gone

ROOT = Path(__file__).resolve().parents[2]


def test_three_masters_serve_every_slot_and_stop_without_a_trace():
    with EmbeddedCluster(3) as cluster:
        pids = [node.pid for node in cluster.nodes]
        dirs = [node.dir for node in cluster.nodes]
        assert cluster.slot_ranges() == [(0, 5460), (5461, 10921), (10922, SLOTS - 1)]
        client = cluster.client()
        try:
            assert client.cluster_info()["cluster_state"] == "ok"
            owners = set()
            for k in range(30):
                key = f"contend:test:{k}"
                client.set(key, k)
                assert client.get(key) == str(k).encode()
                owners.add(client.get_node_from_key(key).port)
            assert owners == {node.port for node in cluster.masters}, "keys land on every master"
        finally:
            client.close()
        assert cluster.url.startswith("redis+cluster://127.0.0.1:")
    assert all(wait_gone(pid) for pid in pids)
    assert not any(d is not None and d.exists() for d in dirs)


def test_a_master_refuses_a_key_of_another_masters_slot():
    """MOVED: the redirections a cluster client follows are real ones."""
    with EmbeddedCluster(3) as cluster:
        first = cluster.masters[0].client()
        try:
            key = next(f"k{n}" for n in range(1000) if cluster_slot(f"k{n}") > 5460)
            with pytest.raises(redis.exceptions.MovedError) as info:
                first.set(key, 1)
            assert str(info.value) == f"{cluster_slot(key)} 127.0.0.1:{cluster.masters[1].port}"
        finally:
            first.close()


def cluster_slot(key: str) -> int:
    from redis.crc import key_slot

    return int(key_slot(key.encode()))


def test_replicas_attach_to_their_masters():
    with EmbeddedCluster(3, 1) as cluster:
        assert len(cluster.nodes) == 6
        for master in cluster.masters:
            with master.client(decode_responses=True) as c:
                assert int(c.info("replication")["connected_slaves"]) == 1
        for replica in cluster.replicas:
            with replica.client(decode_responses=True) as c:
                assert c.info("replication")["role"] == "slave"


@pytest.mark.parametrize(("masters", "replicas"), [(2, 0), (17, 0), (3, -1), (3, 4), ("3", 0)])
def test_sizes_contend_will_not_build_are_refused_before_anything_starts(masters, replicas):
    with pytest.raises(ValueError, match=r"masters|replicas"):
        check_size(masters, replicas)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--cluster", "2"], "--cluster 2: a cluster needs 3 to 16 masters"),
        (["--replicas", "1"], "--replicas goes with --cluster N"),
        (["--cluster", "3", "--replicas", "9"], "--replicas is per master, 0 to 3"),
        (["--cluster", "3", "--persistence", "aof"], "--persistence is for the single server"),
    ],
)
def test_server_cluster_bad_input_exits_2(argv, message, capsys):
    assert main(["server", *argv]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert message in err and "Traceback" not in err


def _node_pids(text: str) -> list[int]:
    return [int(part.split()[0]) for part in text.split(" pid ")[1:]]


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_no_node_outlives_the_process_that_started_the_cluster(sig):
    """`contend server --cluster 3` killed by SIGKILL (no clean-up code runs) or stopped by Ctrl-C:
    every node goes too."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(
        [sys.executable, "-m", "contend.cli", "server", "--cluster", "3", "--replicas", "1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert child.stdout is not None
        lines = []
        for line in child.stdout:
            lines.append(line)
            if line.startswith("url:"):
                break
        pids = _node_pids("".join(lines))
        assert len(pids) == 6, "".join(lines) + (child.stderr.read() if child.poll() is not None else "")
        child.send_signal(sig)
        code = child.wait(20)
        assert code == (-9 if sig is signal.SIGKILL else 130)
        for pid in pids:
            assert wait_gone(pid), f"cluster node {pid} outlived its parent ({sig.name})"
    finally:
        child.kill()
        child.wait()


def test_a_plain_script_starts_and_stops_a_cluster(tmp_path):
    """The cluster works from a plain script too (no pytest, no contend CLI), and exits clean."""
    script = tmp_path / "use_cluster.py"
    script.write_text(
        textwrap.dedent(
            """
            from contend.servers.cluster import EmbeddedCluster
            with EmbeddedCluster(3) as cluster:
                client = cluster.client()
                client.set("a", "1")
                print(client.get("a").decode(), *(n.pid for n in cluster.nodes))
                client.close()
            """
        )
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, done.stderr
    value, *pids = done.stdout.split()
    assert value == "1" and all(wait_gone(int(pid)) for pid in pids)


def test_a_resharded_slot_shows_in_the_trace_as_moved_and_a_retry_on_its_new_node():
    """One round trip to one node is one step; a stale slot map costs a MOVED reply and a retry
    on the slot's new owner, each a step of its own, each naming its node."""
    from contend.schedule.scheduler import Scheduler
    from contend.servers.cluster_client import SlotCheckingCluster

    with EmbeddedCluster(3) as cluster:
        first = cluster.nodes[0]
        client = SlotCheckingCluster(host=first.host, port=first.port)
        admin = cluster.client()
        try:
            key = "{contend:test}:moved"
            admin.set(key, "v")
            client.get(key)  # the scheduled client learns the slot map now
            slot = admin.keyslot(key)
            old = cluster.owner_of(slot)
            new = next(m for m in cluster.masters if m is not old)
            assert cluster.move_slot(slot, new) == 1 and cluster.owner_of(slot) is new
            with Scheduler() as s:
                s.add_client(connection=client)
                s.start(0, lambda: client.get(key), "get")
                steps = [s.step(0) for _ in range(10) if s.runnable()]
                assert s.clients[0].outcome.value == b"v"
                trace = s.format_trace()
            assert [step.node for step in steps] == [f"127.0.0.1:{old.port}", f"127.0.0.1:{new.port}"]
            assert f"→  'MOVED {slot} 127.0.0.1:{new.port}'" in trace, trace
            assert f"@127.0.0.1:{old.port}" in trace and f"@127.0.0.1:{new.port}" in trace
        finally:
            client.close()
            admin.close()
