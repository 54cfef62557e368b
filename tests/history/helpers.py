"""Small hand-written lock-run histories for the history tests."""

from __future__ import annotations

from contend.history.records import Record, pair

MS = 1_000_000


def history(*rows):
    """rows: (process, type, f, value, time_ms[, error]) → paired calls."""
    records = []
    for i, row in enumerate(rows):
        process, kind, f, value, t, *error = row
        key = "counter" if f in ("incr", "read") else ("lock" if f in ("acquire", "release") else None)
        records.append(Record(process, kind, f, key, value, t * MS, i, error[0] if error else None))
    return pair(records).calls


def hold(p, start, write_at, release_at, *, write="ok", token=True):
    """One hold: acquire [start, start+1], incr [write_at, write_at+1], release [release_at, +1]."""
    return [
        (p, "invoke", "acquire", None, start),
        (p, "ok", "acquire", token, start + 1),
        (p, "invoke", "incr", None, write_at),
        (p, write, "incr", 1 if write == "ok" else None, write_at + 1),
        (p, "invoke", "release", None, release_at),
        (p, "ok", "release", "ok", release_at + 1),
    ]


def by_time(rows):
    return sorted(rows, key=lambda r: r[4])
