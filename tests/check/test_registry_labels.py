"""A registry finding is labelled with the property its text describes."""

from __future__ import annotations

import pytest

from contend.check.framework import CheckFailed
from contend.check.registry import check_tables
from impl.catalog import GAP_FREE, TABLES_AGREE, UNIQUE_IDS


class TableRegistry:
    """The read side of a registry over a dict (what check_tables reads back)."""

    def __init__(self, ids: dict[str, int], lookup_off: bool = False) -> None:
        self.ids, self.lookup_off = ids, lookup_off

    def lookup(self, name: str) -> int | None:
        return self.ids[name] + 1 if self.lookup_off else self.ids.get(name)

    def reverse(self, ident: int) -> str | None:
        return next((name for name, i in self.ids.items() if i == ident), None)

    def count(self) -> int:
        return len(self.ids)


@pytest.mark.parametrize(
    ("ids", "lookup_off", "prop", "said"),
    [
        ({"a": 1, "b": 3}, False, GAP_FREE, "gaps at [2]"),
        ({"a": 1, "b": 1}, False, UNIQUE_IDS, "duplicated ids [1]"),
        ({"a": 1, "b": 2}, True, TABLES_AGREE, "lookup('a') = 2"),
    ],
)
def test_each_table_finding_names_the_property_it_describes(ids, lookup_off, prop, said):
    with pytest.raises(CheckFailed) as caught:
        check_tables(TableRegistry(ids, lookup_off), ids, "burst")
    assert caught.value.property == prop and said in str(caught.value)
