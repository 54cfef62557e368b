"""contend.history.access: the one table of the keys each command reads and writes."""

from __future__ import annotations

import pytest

from contend.history.access import KeyAccess, UnknownCommand, accesses


def test_reads_writes_and_commuting_increments():
    assert accesses(["GET", "k"]) == [KeyAccess("k", True, False)]
    assert accesses(["MGET", "a", "b"]) == [KeyAccess("a", True, False), KeyAccess("b", True, False)]
    assert accesses(["SET", "k", "1"]) == [KeyAccess("k", False, True)]
    assert accesses(["SET", "k", "t", "NX", "PX", "100"]) == [KeyAccess("k", True, True)]
    assert accesses(["DECRBY", "k", "3"]) == [KeyAccess("k", False, True, commutes=True)]
    assert accesses(["EVALSHA", "abc", "2", "a", "b", "7"]) == [
        KeyAccess("a", True, True),
        KeyAccess("b", True, True),
    ]
    assert accesses(["MULTI"]) == [] and accesses(["watch", "k"]) == []


def test_a_command_not_in_the_table_is_an_error_naming_it():
    with pytest.raises(UnknownCommand, match="SINTERSTORE is not in contend's table"):
        accesses(["SINTERSTORE", "d", "a", "b"])
