"""`--kind operations` on a Redis Cluster (one embedded 3-master cluster for the module): the
re-run specification's snapshot and restore cover every node, correct primitives whose keys of
one command share a slot pass, known-bad twins are caught as on one server, keys of one command
that span slots are cluster-slots, and a cluster client's refusal is no outcome to compare."""

from __future__ import annotations

import pytest

from contend.impl.catalog import CLUSTER_SLOTS, LINEARIZABLE, NO_SPURIOUS_ERRORS
from contend.machines.sequential import ReRunSpec
from contend.servers.target import open_target
from contend.testing import ContendCheckFailed, check_operations

FIXTURES = "tests.fixtures.operations"
QUICK = {"schedule_examples": 60, "shrink": False}
#: What `contend check --impl` runs (200 interleavings), unshrunk: the evidence is not read here.
UNSHRUNK = {"shrink": False, "check_seconds": 120.0}


@pytest.fixture(scope="module")
def cluster_target():
    with open_target(cluster=3) as target:
        yield target


@pytest.mark.parametrize("module", ["stock_script", "stock_async_watch", "idempotency_async_script"])
def test_a_correct_primitive_passes_on_a_cluster(module, cluster_target):
    (row,) = check_operations(f"{FIXTURES}.{module}:make", cluster_target, **QUICK)
    assert row.verdict == "pass", row


@pytest.mark.parametrize(
    ("module", "prop"),
    [
        ("stock_get_then_decr", LINEARIZABLE),
        ("idempotency_async_multi_unwatched", LINEARIZABLE),
        ("cluster_untagged", CLUSTER_SLOTS),  # MULTI over two slots: refused by redis-py
        # redis-py's cluster pipeline refuses WATCH outside a transaction on every call: compared
        # as an outcome, the re-run would raise it too and pass it.
        ("idempotency_watch", NO_SPURIOUS_ERRORS),
    ],
)
def test_what_breaks_on_a_cluster_is_caught(module, prop, cluster_target):
    with pytest.raises(ContendCheckFailed) as info:
        check_operations(f"{FIXTURES}.{module}:make", cluster_target, **UNSHRUNK)
    (row,) = info.value.rows
    assert [r.prop for r in row.failed] == [prop], str(info.value)
    assert "replay: contend check --cluster 3 --namespace" in str(info.value)  # keys back on their slots


def test_the_re_runs_snapshot_and_restore_cover_every_node(cluster_target):
    """Seats whose keys two different masters serve: a state after booking both holds both keys
    (SCAN of every node), and stepping from the state with one seat booked puts back exactly it."""
    from tests.fixtures.operations.seat_plain import make

    client = cluster_target.client()
    base = next(
        f"contend:test-cluster-rerun:{n}"
        for n in range(200)
        if len(
            {
                client.get_node_from_key(
                    f"contend:test-cluster-rerun:{n}:contend-sequential-spec:seat:{s}"
                ).name
                for s in (1, 2)
            }
        )
        == 2
    )
    spec = ReRunSpec(make, client, base)
    try:
        empty = spec.initial()
        out, one = spec.run(empty, "book", (1, "ann"))
        assert out.value is True
        out, both = spec.run(one, "book", (2, "bob"))
        assert out.value is True
        held = {key for key, _, _ in both.fingerprint}
        assert len({client.get_node_from_key(key).name for key in held}) == 2
        # From `one` again (the namespace holds both seats now): seat 2 is free there, seat 1 not.
        out, _ = spec.run(one, "holder", (2,))
        assert out.value is None
        out, _ = spec.run(one, "holder", (1,))
        assert out.value == "ann"
    finally:
        spec.close()
        assert spec.space.count() == 0
        client.close()
