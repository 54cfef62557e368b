"""Piped output keeps its words: tables at their natural width, never cut or wrapped."""

from __future__ import annotations

import io

from rich.console import Group
from rich.table import Table

from contend.commands.console import LOG_WIDTH, PipeConsole, make_console

LONG = "tests.fixtures.foreign.hopeful_lock:make_with_a_very_long_factory_name"


def wide_table(title: str) -> Table:
    table = Table(title=title)
    table.add_column("implementation")
    for i in range(14):
        table.add_column(f"check-number-{i}", justify="center")
    table.add_column("verdict")
    table.add_row(f"{LONG} (known-bad)", *(["caught: safety"] * 14), "NOT CAUGHT")
    return table


def test_a_piped_table_is_printed_whole_one_record_per_line(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)  # $COLUMNS would ask for a terminal's width
    sink = io.StringIO()
    console = make_console(sink, file=sink)
    assert isinstance(console, PipeConsole)  # a StringIO is no terminal
    console.print(Group(wide_table("one"), wide_table("two")))
    console.print("a sentence " * 30)  # text still wraps at the log width
    lines = sink.getvalue().splitlines()
    rows = [line for line in lines if LONG in line]
    assert len(rows) == 2 and all("NOT CAUGHT" in row and row.count("caught: safety") == 14 for row in rows)
    assert "…" not in sink.getvalue()
    assert max(len(line) for line in lines if "a sentence" in line) <= LOG_WIDTH


def test_a_key_with_colons_is_printed_as_it_is_not_as_an_emoji(monkeypatch):
    """rich would turn `:seat:` in `sem:seat:1` into 💺: evidence quotes keys as they are, piped or not."""
    for columns in (None, "120"):  # a pipe's console, and a terminal's width
        if columns is None:
            monkeypatch.delenv("COLUMNS", raising=False)
        else:
            monkeypatch.setenv("COLUMNS", columns)
        sink = io.StringIO()
        make_console(sink, file=sink).print("HGET contend:x:sem:seat:1 :smile:")
        assert sink.getvalue().strip() == "HGET contend:x:sem:seat:1 :smile:"
