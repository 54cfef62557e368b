"""contend.history.access: each command's reads and writes, from the server's own command table.

Run against the default server (Redis 6.2: no key specifications) and Valkey (key specifications)."""

from __future__ import annotations

import pytest

from contend.history.access import CommandTable, KeyAccess
from contend.servers.record import command_table, get_keys


@pytest.fixture(params=["redis-6.2", "valkey"])
def table(request) -> CommandTable:
    target = request.getfixturevalue("redis62_target" if request.param == "redis-6.2" else "valkey_target")
    client = target.client()
    return CommandTable(command_table(client), lambda args: get_keys(client, args), describe=request.param)


def accesses(table: CommandTable, *args: str) -> list[KeyAccess]:
    placed = table.place(list(args))
    assert not placed.unplaced, placed.unplaced
    return list(placed.accesses)


def test_reads_writes_and_commuting_increments(table):
    assert accesses(table, "GET", "k") == [KeyAccess("k", True, False)]
    assert accesses(table, "MGET", "a", "b") == [KeyAccess("a", True, False), KeyAccess("b", True, False)]
    assert accesses(table, "SET", "k", "1") == [KeyAccess("k", False, True)]
    assert accesses(table, "SET", "k", "t", "NX", "PX", "100") == [KeyAccess("k", True, True)]
    assert accesses(table, "DECRBY", "k", "3") == [KeyAccess("k", False, True, commutes=True)]
    assert accesses(table, "HINCRBY", "h", "f", "3") == [KeyAccess("h", False, True, commutes=True)]
    assert accesses(table, "SMISMEMBER", "s", "x", "y") == [KeyAccess("s", True, False)]
    assert accesses(table, "DEL", "a", "b") == [KeyAccess("a", False, True), KeyAccess("b", False, True)] or (
        table.describe == "redis-6.2"  # no key specifications: every key a write names is read and written
        and accesses(table, "DEL", "a", "b") == [KeyAccess("a", True, True), KeyAccess("b", True, True)]
    )
    assert accesses(table, "MULTI") == [] and accesses(table, "WATCH", "k") == []
    assert accesses(table, "PUBLISH", "news", "hello") == []  # a channel is no key


def test_a_script_counts_by_what_it_ran_unless_the_record_did_not_show_it(table):
    assert table.place(["EVALSHA", "abc", "2", "a", "b", "7"], script_shown=True).accesses == ()
    assert list(table.place(["EVALSHA", "abc", "2", "a", "b", "7"]).accesses) == [
        KeyAccess("a", True, True),
        KeyAccess("b", True, True),
    ]
    assert list(table.place(["EVAL_RO", "return 1", "1", "a"]).accesses) == [KeyAccess("a", True, False)]


def test_the_keys_a_command_moves_are_found_by_the_server(table):
    placed = table.place(["ZUNIONSTORE", "dst", "2", "x", "y"])
    if table.describe == "valkey":  # key specifications: the destination written, the sources read
        assert list(placed.accesses) == [
            KeyAccess("dst", False, True),
            KeyAccess("x", True, False),
            KeyAccess("y", True, False),
        ]
    else:  # Redis 6.2 finds its keys (COMMAND GETKEYS) but cannot say which it writes
        assert placed.unplaced.startswith("writes some of its keys") and sorted(placed.keys or ()) == [
            "dst",
            "x",
            "y",
        ]


def test_a_command_the_table_cannot_place_names_why(table):
    placed = table.place(["NOSUCHCOMMAND", "k"])
    assert placed.unplaced == "is not in the server's command table" and placed.keys is None
    sinter = table.place(["SINTERSTORE", "d", "a", "b"])
    if table.describe == "valkey":
        assert [(a.key, a.reads, a.writes) for a in sinter.accesses] == [
            ("d", False, True),
            ("a", True, False),
            ("b", True, False),
        ]
    else:
        assert sinter.unplaced and sinter.keys == ("d", "a", "b")


def test_subcommands_are_placed(table):
    (placed,) = accesses(table, "OBJECT", "ENCODING", "k")
    assert (placed.key, placed.reads, placed.writes) == ("k", True, False)


def test_a_read_of_existence_or_ttl_is_no_read_of_the_value(table):
    assert accesses(table, "EXISTS", "k") == [KeyAccess("k", True, False, metadata=True)]
    assert accesses(table, "PTTL", "k") == [KeyAccess("k", True, False, metadata=True)]
    assert accesses(table, "GET", "k") == [KeyAccess("k", True, False)]
