"""contend.history.isolation: the conflict graph from the server's order, and its cycles named."""

from __future__ import annotations

import pytest

from contend.history.access import UnknownCommand
from contend.history.isolation import G2_ITEM, G_SINGLE, LOST_UPDATE, RoundTrip, check_serializable

OK = [b"OK"]


def trips(*rows: tuple) -> list[RoundTrip]:
    """(op, commands, replies[, lost]) in the server's order."""
    return [RoundTrip(op, n, cmds, replies, *rest) for n, (op, cmds, replies, *rest) in enumerate(rows)]


def multi(*cmds: list[str], result: object = (b"OK", b"OK")) -> tuple[list[list[str]], list[object]]:
    body = list(cmds)
    return [["MULTI"], *body, ["EXEC"]], [
        b"OK",
        *([b"QUEUED"] * len(body)),
        None if result is None else list(result),
    ]


def transfer_no_watch(op: str) -> tuple:
    cmds, replies = multi(["SET", "a", "7"], ["SET", "b", "13"])
    return (op, cmds, replies)


def test_a_lost_update_is_named_with_its_edges():
    steps = trips(
        ("T1", [["MGET", "a", "b"]], [[b"10", b"10"]]),
        ("T2", [["MGET", "a", "b"]], [[b"10", b"10"]]),
        transfer_no_watch("T2"),
        transfer_no_watch("T1"),
    )
    cycle = check_serializable(steps, label=lambda k: f"acct:{k}")
    assert cycle is not None and cycle.anomaly == LOST_UPDATE
    assert cycle.path() == "T1 -rw(acct:a)-> T2 -ww(acct:a)-> T1"


def test_commuting_increments_leave_only_anti_dependencies_write_skew():
    debit_a = multi(["DECRBY", "a", "10"], ["INCRBY", "b", "10"], result=(0, 20))
    debit_a_to_c = multi(["DECRBY", "a", "10"], ["INCRBY", "c", "10"], result=(-10, 20))
    steps = trips(
        ("T1", [["WATCH", "b"]], OK),
        ("T1", [["MGET", "a", "b"]], [[b"10", b"10"]]),
        ("T2", [["WATCH", "c"]], OK),
        ("T2", [["MGET", "a", "c"]], [[b"10", b"10"]]),
        ("T1", *debit_a),
        ("T2", *debit_a_to_c),
    )
    cycle = check_serializable(steps)
    assert cycle is not None and cycle.anomaly == G2_ITEM
    assert {e.kind for e in cycle.edges} == {"rw"}


def test_read_skew_in_an_audit_by_separate_reads():
    steps = trips(
        ("A", [["GET", "a"]], [b"10"]),
        ("T", [["EVALSHA", "s", "2", "a", "b", "3"]], [1]),
        ("A", [["GET", "b"]], [b"13"]),
    )
    cycle = check_serializable(steps)
    assert cycle is not None and cycle.anomaly == G_SINGLE
    assert cycle.path() == "A -rw(a)-> T -wr(b)-> A"


def test_watched_reads_count_at_exec_and_an_aborted_attempt_counts_as_nothing():
    aborted = multi(["SET", "a", "7"], ["SET", "b", "13"], result=None)
    steps = trips(
        ("T1", [["WATCH", "a", "b"]], OK),
        ("T1", [["MGET", "a", "b"]], [[b"10", b"10"]]),
        ("T2", [["WATCH", "a", "b"]], OK),
        ("T2", [["MGET", "a", "b"]], [[b"10", b"10"]]),
        transfer_no_watch("T2"),
        ("T1", *aborted),  # its reads and writes are nothing
        ("T1", [["WATCH", "a", "b"]], OK),
        ("T1", [["MGET", "a", "b"]], [[b"7", b"13"]]),
        ("T3", [["SET", "c", "1"]], OK),  # between the reads and the EXEC, on another key
        transfer_no_watch("T1"),
    )
    assert check_serializable(steps) is None


def test_a_given_up_watch_attempt_a_lost_read_and_a_failed_ops_reads_are_no_evidence():
    steps = trips(
        ("A", [["WATCH", "a", "b"]], OK),
        ("A", [["GET", "a"]], [b"10"]),
        ("T", [["EVALSHA", "s", "2", "a", "b", "3"]], [1]),
        ("A", [["GET", "b"]], [b"13"]),
        ("A", [["UNWATCH"]], OK),  # gave up: no EXEC
        ("B", [["GET", "a"]], [b"7"], True),  # its reply was lost
        ("T2", [["EVALSHA", "s", "2", "a", "b", "3"]], [1]),
        ("B", [["GET", "b"]], [b"16"]),
        ("C", [["GET", "a"]], [b"4"]),
        ("T3", [["EVALSHA", "s", "2", "a", "b", "3"]], [1]),
        ("C", [["GET", "b"]], [b"19"]),
    )
    assert check_serializable(steps, no_reads={"C"}) is None
    assert check_serializable(steps[:8]) is None
    assert check_serializable(steps) is not None  # C's reads, if they counted, are a read skew


def test_only_the_data_keys_count_and_unknown_commands_are_refused():
    steps = trips(
        ("T1", [["SET", "lock", "x", "NX"]], OK),
        ("T2", [["SET", "lock", "y", "NX"]], [None]),
        ("T1", [["DEL", "lock"]], [1]),
        ("T2", [["SET", "lock", "y", "NX"]], OK),
    )
    assert check_serializable(steps) is not None  # a lock's own keys do interleave
    assert check_serializable(steps, is_data=lambda k: k != "lock") is None
    with pytest.raises(UnknownCommand, match="BLMOVE"):
        check_serializable(trips(("T1", [["BLMOVE", "a", "b"]], [None])))
