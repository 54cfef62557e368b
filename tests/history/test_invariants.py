"""The linear-time invariants: registry ids, lock holds, fencing tokens, the locked counter, critical sections, lease validity, registry errors."""

from __future__ import annotations

from contend.history.invariants import (
    critical_sections,
    fencing_tokens,
    lease_validity,
    lock_holds,
    locked_counter,
    registry_errors,
    registry_ids,
)
from contend.history.records import UNSENT, Call, Record
from tests.history.helpers import by_time, history, hold


def call(k, process, f, value, output, start, end, status="ok", key=None):
    inv = Record(process, "invoke", f, key, value, start, 2 * k, line=k + 1)
    return Call(k, process, f, key, value, output, status, start, end, inv, None)


def test_registry_ids_invariant():
    calls = [
        call(0, 0, "register", "a", 1, 0, 10),
        call(1, 1, "register", "b", 1, 5, 15),
        call(2, 2, "register", "c", 7, 20, 30),
        call(3, 0, "lookup", "a", 2, 40, 50),
        call(4, 1, "lookup", "c", None, 60, 70),
        call(5, 2, "reverse", 1, "a", 80, 90),
    ]
    messages = [v.message for v in registry_ids(calls)]
    assert any("given to both 'a' and 'b'" in m for m in messages)
    assert any("'a' has id 1, then id 2" in m for m in messages)
    assert any("id 7 for 'c', but at most 3 names" in m for m in messages)
    assert any("lookup('c') → nil after its register completed" in m for m in messages)
    assert registry_ids(calls[:1]) == []


def test_lock_holds_invariant():
    fine = [
        call(0, 0, "acquire", None, True, 0, 10),
        call(1, 1, "acquire", None, False, 5, 12),
        call(2, 0, "release", None, "ok", 20, 30),
        call(3, 1, "acquire", None, True, 25, 40),
    ]
    assert lock_holds(fine) == []
    overlap = [*fine[:3], call(3, 1, "acquire", None, True, 11, 15)]
    (v,) = lock_holds(overlap)
    assert "process 1 acquired lock while process 0 still held it" in v.message
    assert "line 1" in str(v) and "line 4" in str(v)


def test_fencing_tokens_invariant():
    fine = [call(0, 0, "acquire", None, 1, 0, 10), call(1, 1, "acquire", None, 2, 20, 30)]
    assert fencing_tokens(fine) == []
    back = [call(0, 0, "acquire", None, 5, 0, 10), call(1, 1, "acquire", None, 3, 20, 30)]
    (v,) = fencing_tokens(back)
    assert "token 3 issued after token 5" in v.message
    twice = [call(0, 0, "acquire", None, 4, 0, 10), call(1, 1, "acquire", None, 4, 5, 30)]
    assert "handed out twice" in fencing_tokens(twice)[0].message


def test_locked_counter_invariant():
    incrs = [call(k, k, "incr", None, None, 10 * k, 10 * k + 5) for k in range(5)]
    lost = call(9, 9, "incr", None, None, 200, None, status="info")
    good = [*incrs, lost, call(10, 0, "read", None, 5, 100, 110), call(11, 0, "read", None, 6, 300, 310)]
    assert locked_counter(good) == []
    bad = [*incrs, call(10, 0, "read", None, 4, 100, 110)]
    (v,) = locked_counter(bad)
    assert "read 4, but at least 5 increments" in v.message


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


def test_registry_errors_count_refusals_not_unreached_servers():
    calls = history(
        (0, "invoke", "register", "a", 0),
        (0, "fail", "register", None, 1, "RegistrationError: Failed to register: name=a"),
        (1, "invoke", "register", "b", 2),
        (1, "fail", "register", None, 3, UNSENT + "ConnectionError: Error 111 connecting"),
    )
    (v,) = registry_errors(calls)
    assert v.message.startswith("1 register call(s) failed, the first with RegistrationError")


def test_registry_errors_let_bad_input_be_refused():
    calls = history(
        (0, "invoke", "register", "", 0),
        (0, "fail", "register", None, 1, "ValueError: empty name"),
        (1, "invoke", "register_many", ["a", 7], 2),
        (1, "fail", "register_many", None, 3, "TypeError: not a string"),
    )
    assert registry_errors(calls) == []
