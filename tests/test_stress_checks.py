"""The lock and registry checks of a stress run, on small hand-written histories, and the merge."""

from __future__ import annotations

import json

from contend.history.checker import Outcome, check_calls
from contend.history.invariants import critical_sections, lease_validity, registry_errors
from contend.history.models import LockRunModel
from contend.history.records import UNSENT, Record, pair
from contend.stress.run import merge

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


def test_sequential_holds_are_fine():
    calls = history(*by_time(hold(0, 0, 5, 7) + hold(1, 10, 15, 17)))
    assert critical_sections(calls) == []
    assert lease_validity(calls, ttl_ms=100) == []


def test_a_paused_holder_whose_write_lands_overlaps_its_successor():
    # p0 acquires at 0 and writes at 500 (it was paused); p1 acquired at 300, after the lease expired.
    calls = history(*by_time(hold(0, 0, 500, 502) + hold(1, 300, 305, 307)))
    (v,) = critical_sections(calls)
    assert v.check == "critical sections"
    assert [c.process for c in v.calls] == [0, 1, 0]
    assert "two holders at once" in v.message
    assert lease_validity(calls, ttl_ms=200) == [], "the lease had expired: a lease is not a fence"


def test_a_refused_stale_write_is_no_overlap():
    calls = history(*by_time(hold(0, 0, 500, 502, write="fail", token=1) + hold(1, 300, 305, 307, token=2)))
    assert critical_sections(calls) == []


def test_one_violation_per_overlapped_hold():
    rows = hold(0, 0, 900, 902)
    for k in range(5):
        rows += hold(1 + k, 300 + 100 * k, 305 + 100 * k, 307 + 100 * k)
    assert len(critical_sections(history(*by_time(rows)))) == 1


def test_a_lease_lost_early_is_caught():
    # p0's lease (2000 ms) is live and unreleased when p1 acquires at 100 ms: lost (a restart).
    rows = [
        (0, "invoke", "acquire", None, 0),
        (0, "ok", "acquire", True, 1),
        (0, "invoke", "incr", None, 50),
        (0, "fail", "incr", None, 51, UNSENT + "ConnectionError: refused"),
        (0, "invoke", "release", None, 52),
        (0, "fail", "release", None, 53, UNSENT + "ConnectionError: refused"),
        (1, "invoke", "acquire", None, 100),
        (1, "ok", "acquire", True, 101),
    ]
    (v,) = lease_validity(history(*rows), ttl_ms=2000)
    assert "process 1 acquired the lock while process 0's lease still had 1899 ms" in v.message
    # Released first, or expired first, or overlapping acquires: no claim.
    released = [*rows[:4], (0, "invoke", "release", None, 52), (0, "ok", "release", "ok", 53), *rows[6:]]
    assert lease_validity(history(*released), ttl_ms=2000) == []
    assert lease_validity(history(*rows), ttl_ms=90) == []
    concurrent = [(1, "invoke", "acquire", None, 0), *rows[:2], (1, "ok", "acquire", True, 101)]
    assert lease_validity(history(*concurrent), ttl_ms=2000) == []


def test_a_release_that_finds_the_lease_gone_early_is_caught():
    rows = [
        (0, "invoke", "acquire", None, 0),
        (0, "ok", "acquire", True, 1),
        (0, "invoke", "release", None, 100),
        (0, "ok", "release", "not-owner", 101),
        (0, "invoke", "acquire", None, 102),  # and it takes the lock again at once
        (0, "ok", "acquire", True, 103),
    ]
    (v,) = lease_validity(history(*rows), ttl_ms=2000)
    assert (
        v.message
        == "process 0's release found its lease gone with 1899 ms of its 2000 ms still to run (lost early)"
    )
    assert lease_validity(history(*rows), ttl_ms=50) == [], "past its TTL a lease may be gone"
    unsent = [*rows[:3], (0, "fail", "release", None, 101, UNSENT + "ConnectionError"), *rows[4:]]
    (v,) = lease_validity(history(*unsent), ttl_ms=2000)
    assert v.message.startswith("process 0 acquired the lock while process 0's lease still had 1897 ms")


def test_lock_run_model_leaves_the_counter_to_the_invariants():
    calls = history(*by_time(hold(0, 0, 5, 7) + hold(1, 10, 15, 17)))
    verdict = check_calls(calls, LockRunModel(spontaneous_expiry=True))
    assert verdict.outcome is Outcome.LINEARIZABLE and verdict.skipped == 2


def test_registry_errors_count_refusals_not_unreached_servers():
    calls = history(
        (0, "invoke", "register", "a", 0),
        (0, "fail", "register", None, 1, "RegistrationError: Failed to register: name=a"),
        (1, "invoke", "register", "b", 2),
        (1, "fail", "register", None, 3, UNSENT + "ConnectionError: Error 111 connecting"),
    )
    (v,) = registry_errors(calls)
    assert v.message.startswith("1 register call(s) failed, the first with RegistrationError")


def test_merge_orders_by_time_and_drops_a_cut_line(tmp_path):
    a, b = tmp_path / "w0.jsonl", tmp_path / "w1.jsonl"
    a.write_text(
        json.dumps({"process": 0, "type": "invoke", "f": "acquire", "key": "lock", "value": None, "time": 10})
        + "\n"
        + json.dumps({"process": 0, "type": "ok", "f": "acquire", "key": "lock", "value": True, "time": 30})
        + "\n"
        + '{"process": 0, "type": "invoke", "f": "inc'  # the worker was killed mid-write
    )
    b.write_text(
        json.dumps({"process": 1, "type": "invoke", "f": "acquire", "key": "lock", "value": None, "time": 20})
        + "\n"
    )
    events = [{"process": "nemesis", "type": "info", "f": "client-pause", "value": "start", "time": 25}]
    finals = [
        {
            "process": "final",
            "type": "ok",
            "f": "read",
            "key": "counter",
            "value": 7,
            "time": 50,
            "invoke": 40,
        }
    ]
    records = merge([a, b, tmp_path / "missing.jsonl"], events, finals)
    assert [(r.process, r.type, r.time) for r in records] == [
        (0, "invoke", 10),
        (1, "invoke", 20),
        ("nemesis", "info", 25),
        (0, "ok", 30),
        ("final", "invoke", 40),
        ("final", "ok", 50),
    ]
    assert [r.index for r in records] == list(range(6)) and records[0].line == 1
    calls = pair(records).calls
    assert [c.status for c in calls] == ["ok", "info", "ok"], "p1's acquire never completed: info"
