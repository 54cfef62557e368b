"""The embedded Sentinel group: a real failover that clients following Sentinel survive."""

from __future__ import annotations

from contend.servers.sentinel import EmbeddedSentinelGroup, lost_writes
from tests.servers.test_server import wait_gone


def test_a_killed_master_is_replaced_and_sentinel_clients_follow():
    with EmbeddedSentinelGroup() as group:
        pids = [p.pid for p in (*group.servers, *group.sentinels)]
        client = group.master_for()
        try:
            client.set("contend:sentinel-test:before", "1")
            old = group.master()
            seconds = group.fail_over()
            assert 0 < seconds < group.ready_timeout
            new = group.master()
            assert new is not old and not old.running
            assert client.get("contend:sentinel-test:before") == b"1", "replicated before the kill"
            assert client.set("contend:sentinel-test:after", "2"), "the client found the new master"
            with new.client() as direct:
                assert direct.get("contend:sentinel-test:after") == b"2"
            group.restart_old_master(old)
            assert old.running
        finally:
            client.close()
    assert all(wait_gone(pid) for pid in pids if pid is not None)


def test_a_writer_following_sentinel_carries_on_after_a_failover():
    """Acknowledged writes keep coming after the kill (the writer found the new master); the ones
    the new master lacks are counted as lost (asynchronous replication may lose the last few)."""
    with EmbeddedSentinelGroup() as group:
        f = lost_writes(group)
        assert f.seconds > 0 and f.acked_after > 0
        with group.master().client() as new_master:
            present = sum(1 for _ in new_master.scan_iter(match="contend:failover:*", count=1000))
    assert f.acked - f.lost <= present
