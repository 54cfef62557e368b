"""Records paired into calls: ok, fail, info, pending, and the errors that name the line."""

from __future__ import annotations

import pytest

from contend.history.records import HistoryError, Record, pair
from contend.models.base import UNKNOWN


def rec(process, kind, f, value=None, time=None, key=None):
    return Record(process, kind, f, key, value, time)


def test_pair_ok_fail_info_and_pending():
    records = [
        rec(0, "invoke", "write", 1, 10),
        rec(1, "invoke", "read", None, 11),
        rec(0, "ok", "write", 1, 20),
        rec(1, "fail", "read", None, 21),
        rec(0, "invoke", "cas", [1, 2], 30),
        rec("nemesis", "info", "start", None, 31),
        rec(0, "info", "cas", "timed-out", 40),
        rec(2, "invoke", "read", None, 50),
    ]
    paired = pair(records)
    write, read, cas, pending = paired.calls
    assert (write.status, write.start, write.end, write.output) == ("ok", 10, 20, 1)
    assert (read.status, read.end) == ("fail", 21)
    assert (cas.status, cas.end, cas.output, cas.value) == ("info", None, UNKNOWN, [1, 2])
    assert (pending.status, pending.end, pending.output) == ("info", None, UNKNOWN)
    assert [r.f for r in paired.nemesis] == ["start"]
    assert write.op().f == "write" and cas.op().output is UNKNOWN


def test_pair_without_times_uses_positions():
    calls = pair([rec(0, "invoke", "read"), rec(1, "invoke", "read"), rec(0, "ok", "read", 1)]).calls
    assert [(c.start, c.end) for c in calls] == [(0, 2), (1, None)]


@pytest.mark.parametrize(
    ("records", "needle"),
    [
        ([rec(0, "ok", "read", 1)], "expected an invoke by process 0"),
        ([rec(0, "invoke", "read"), rec(0, "invoke", "write", 1)], "to complete its read"),
        (
            [rec(0, "invoke", "read"), rec(0, "info", "read"), rec(0, "invoke", "read")],
            "expected a new process id",
        ),
        ([rec(0, "invoke", "read"), rec(0, "ok", "write", 1)], "expected the completion of read"),
        ([rec(0, "invoke", "read", None, 10), rec(0, "ok", "read", None, 5)], "before its invocation"),
    ],
)
def test_pair_errors(records, needle):
    records = [
        Record(r.process, r.type, r.f, r.key, r.value, r.time, i, line=i + 1) for i, r in enumerate(records)
    ]
    with pytest.raises(HistoryError, match=needle) as exc:
        pair(records)
    assert "line " in str(exc.value)
