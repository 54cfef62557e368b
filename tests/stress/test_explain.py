"""contend.stress.explain: an unfenced lock's two holders explained by the client-pause that
outlived the lease, and only then."""

from __future__ import annotations

from contend.history.invariants import Violation
from contend.history.records import Record, pair
from contend.stress.explain import pauses_past_lease, two_holders_explained


def _pause(process: int, ms: int) -> list[Record]:
    return [
        Record("nemesis", "info", "client-pause", None, f"start: process {process} (pid 9) stopped, holding "
               "the lock before its write (TTL 300 ms)", 1),
        Record("nemesis", "info", "client-pause", None, f"stop: process {process} (pid 9) resumed after "
               f"{ms} ms; other workers wrote 3 time(s) meanwhile", 2),
    ]  # fmt: skip


def _two_holders(check: str = "critical sections") -> list[Violation]:
    records = []
    for i, p in enumerate((1, 2)):
        records += [Record(p, "invoke", "incr", "c", None, 10 + i), Record(p, "ok", "incr", "c", i, 20 + i)]
    for i, r in enumerate(records):
        r.index = i
    return [Violation(check, "two holders at once", tuple(pair(records).calls))]


def test_a_pause_past_the_lease_of_an_involved_process_is_named():
    why = two_holders_explained(_two_holders(), _pause(1, 461), 300, fenced=False)
    assert why[0].startswith("why: client-pause stopped process 1 for 461 ms while it held the lock")
    assert "longer than its 300 ms lease" in why[0] and "process 2 took the lock" in why[0]
    assert "only fencing protects the resource" in why[1]
    assert "--only fenced" in why[2] and "--claim fencing" in why[2]


def test_nothing_is_explained_that_the_pause_does_not_explain():
    assert two_holders_explained(_two_holders(), _pause(1, 461), 300, fenced=True) == []
    assert two_holders_explained(_two_holders(), _pause(1, 200), 300, fenced=False) == []  # within the lease
    assert two_holders_explained(_two_holders(), _pause(7, 461), 300, fenced=False) == []  # not involved
    assert two_holders_explained(_two_holders("registry ids"), _pause(1, 461), 300, fenced=False) == []
    assert pauses_past_lease(_pause(1, 461)[1:], 300) == []  # a stop without its start
