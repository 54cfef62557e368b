"""contend.history.isolation: the conflict graph from the server's order, and its cycles named."""

from __future__ import annotations

import pytest

from contend.history.access import CommandTable, UnknownCommand
from contend.history.isolation import (
    GUARDED_WRITE_SKEW,
    LOST_UPDATE,
    READ_SKEW,
    WRITE_SKEW,
    Executed,
    RoundTrip,
    judge,
)
from contend.history.isolation import check_serializable as _check
from contend.servers.record import command_table, get_keys

OK = [b"OK"]


@pytest.fixture(scope="module")
def table(request) -> CommandTable:
    client = request.getfixturevalue("contend_target").client()
    return CommandTable(command_table(client), lambda args: get_keys(client, args))


@pytest.fixture(autouse=True)
def _table(table):
    global TABLE
    TABLE = table


TABLE: CommandTable


def check_serializable(steps, **kwargs):
    return _check(steps, TABLE, **kwargs)


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
    assert check_serializable(steps).anomaly == WRITE_SKEW  # nobody said which key is a balance debited
    cycle = judge(steps, TABLE, debits={"T1": {"a"}, "T2": {"a"}}).cycle
    assert cycle is not None and cycle.anomaly == GUARDED_WRITE_SKEW
    assert {e.kind for e in cycle.edges} == {"rw"} and {e.key for e in cycle.edges} == {"a"}
    assert cycle.describe().startswith("write skew under an overdraft guard (G2-item): ")


def test_read_skew_in_an_audit_by_separate_reads():
    steps = trips(
        ("A", [["GET", "a"]], [b"10"]),
        ("T", [["EVALSHA", "s", "2", "a", "b", "3"]], [1]),
        ("A", [["GET", "b"]], [b"13"]),
    )
    cycle = check_serializable(steps)
    assert cycle is not None and cycle.anomaly == READ_SKEW
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


def test_only_the_data_keys_count():
    steps = trips(
        ("T1", [["SET", "lock", "x", "NX"]], OK),
        ("T2", [["SET", "lock", "y", "NX"]], [None]),
        ("T1", [["DEL", "lock"]], [1]),
        ("T2", [["SET", "lock", "y", "NX"]], OK),
    )
    assert check_serializable(steps) is not None  # a lock's own keys do interleave
    assert check_serializable(steps, is_data=lambda k: k != "lock") is None


def test_a_command_the_table_cannot_place_matters_only_where_it_touches_data():
    data = {"a", "b"}.__contains__
    elsewhere = trips(
        ("T1", [["SINTERSTORE", "tmp", "x", "y"]], [0]),  # Redis 6.2 cannot place it: not on data
        ("T1", [["NOSUCH", "zz"]], [None]),
        ("T2", [["PUBLISH", "news", "a"]], [0]),  # a channel, even one named like a key, is no key
    )
    assert judge(elsewhere, TABLE, is_data=data).unplaced == []
    on_data = trips(("T1", [["NOSUCH", "a"]], [None]))
    with pytest.raises(UnknownCommand, match="NOSUCH is not in the server's command table; it touched a"):
        check_serializable(on_data, is_data=data)


def test_a_cycle_stands_whatever_a_command_the_table_cannot_place_did():
    steps = trips(
        ("T1", [["MGET", "a", "b"]], [[b"10", b"10"]]),
        ("T2", [["MGET", "a", "b"]], [[b"10", b"10"]]),
        transfer_no_watch("T2"),
        transfer_no_watch("T1"),
        ("T3", [["NOSUCH", "a"]], [None]),
    )
    found = judge(steps, TABLE)
    assert found.cycle is not None and found.cycle.anomaly == LOST_UPDATE and found.unplaced


def test_a_read_only_script_under_watch_reads_what_it_ran():
    """What the server ran, not what the script names: a script that only GETs is no write. Two
    transfers each WATCH both accounts, read them with one script and write them in MULTI/EXEC;
    the second's EXEC aborts."""
    script = ["EVALSHA", "s", "2", "a", "b"]
    read = (Executed(tuple(script)), Executed(("GET", "a"), True), Executed(("GET", "b"), True))
    writes = [["MULTI"], ["SET", "a", "7"], ["SET", "b", "13"], ["EXEC"]]

    def step(op: str, at: int, sent: list, replies: list, ran: tuple | None = None) -> RoundTrip:
        return RoundTrip(op, at, sent, replies, ran=ran or tuple(Executed(tuple(c)) for c in sent))

    steps = [
        step("T1", 0, [["WATCH", "a", "b"]], OK),
        step("T1", 1, [script], [[b"10", b"10"]], read),
        step("T2", 2, [["WATCH", "a", "b"]], OK),
        step("T2", 3, [script], [[b"10", b"10"]], read),
        step("T1", 4, writes, [b"OK", b"QUEUED", b"QUEUED", [b"OK", b"OK"]]),
        step(
            "T2", 5, writes, [b"OK", b"QUEUED", b"QUEUED", None], (Executed(("MULTI",)), Executed(("EXEC",)))
        ),
    ]
    assert judge(steps, TABLE).cycle is None
    # Without the record each script is taken to write both keys it names: a false alarm.
    blind = [RoundTrip(t.op, t.position, t.commands, t.replies) for t in steps]
    cycle = judge(blind, TABLE).cycle
    assert cycle is not None and cycle.anomaly == "G0"


def test_a_block_a_watch_aborted_shows_no_commands_in_the_record():
    steps = [
        RoundTrip("T1", 0, [["WATCH", "a"]], OK, ran=[Executed(("WATCH", "a"))]),
        RoundTrip("T1", 1, [["GET", "a"]], [b"10"], ran=[Executed(("GET", "a"))]),
        RoundTrip("T2", 2, [["SET", "a", "1"]], OK, ran=[Executed(("SET", "a", "1"))]),
        RoundTrip(
            "T1",
            3,
            [["MULTI"], ["SET", "a", "9"], ["EXEC"]],
            [b"OK", b"QUEUED", None],
            ran=[Executed(("MULTI",)), Executed(("EXEC",))],
        ),
        RoundTrip("T2", 4, [["GET", "a"]], [b"1"], ran=[Executed(("GET", "a"))]),
    ]
    assert judge(steps, TABLE).cycle is None


def test_write_skew_between_two_overwrites():
    steps = trips(
        ("T1", [["MGET", "a", "b"]], [[b"10", b"10"]]),
        ("T2", [["MGET", "a", "b"]], [[b"10", b"10"]]),
        ("T1", [["SET", "a", "0"]], OK),
        ("T2", [["SET", "b", "0"]], OK),
    )
    cycle = check_serializable(steps)
    assert cycle is not None and cycle.anomaly == WRITE_SKEW
    assert cycle.describe().startswith("write skew (G2-item): ")
