"""critical sections on a fenced lock: two holds whose writes may have reached the resource in
token order harmed nothing (a holder starved past its lease on a busy machine, whose write landed
just before its successor's, was called two holders with `--only fenced`); a lower token's write
that surely landed after a higher one's is still a violation, and so is any overlap unfenced."""

from __future__ import annotations

from contend.history.invariants import critical_sections
from contend.history.records import Record, pair

MS = 1_000_000


def _history(tokens: tuple[object, object], late_write_at: int) -> list[Record]:
    """Process 0 takes the lock (token or True) and is slow; its lease runs out, process 1 takes
    it and writes from 400 to 402 ms; process 0's write is called at `late_write_at` ms."""
    rows = [
        (0, "invoke", "acquire", None, 0),
        (0, "ok", "acquire", tokens[0], 1),
        (1, "invoke", "acquire", None, 390),
        (1, "ok", "acquire", tokens[1], 391),
        (1, "invoke", "incr", None, 400),
        (1, "ok", "incr", 1, 402),
        (0, "invoke", "incr", None, late_write_at),
        (0, "ok", "incr", 2, late_write_at + 2),
        (1, "invoke", "release", None, 410),
        (1, "ok", "release", None, 411),
        (0, "invoke", "release", None, 420),
        (0, "ok", "release", None, 421),
    ]
    records = [Record(p, kind, f, "L" if f != "incr" else "c", v, t * MS) for p, kind, f, v, t in rows]
    records.sort(key=lambda r: r.time)
    for i, r in enumerate(records):
        r.index = i
    return records


def _found(records: list[Record]) -> list[str]:
    return [v.check for v in critical_sections(pair(records).calls)]


def test_fenced_writes_that_may_have_landed_in_token_order_are_no_violation():
    assert _found(_history((5, 6), late_write_at=399)) == []  # called before the successor's returned
    assert _found(_history((5, 6), late_write_at=402)) == []  # ... or as it returned


def test_a_lower_tokens_write_that_surely_came_later_is_a_violation():
    assert _found(_history((5, 6), late_write_at=405)) == ["critical sections"]


def test_without_tokens_any_overlap_is_a_violation():
    assert _found(_history((True, True), late_write_at=399)) == ["critical sections"]
