"""The lock battery's stalled-holder checks (expiry, stale-extend) judge safe release only where a
successor took the lock: where none could, they say "not exercised" rather than pass on nothing."""

from __future__ import annotations

import json
from types import SimpleNamespace

from contend.check.lock_faults import LATE_RELEASE, judged_positions
from contend.cli import main

IMPL = [
    "check",
    "--impl",
    "tests.check.no_lease_extend_lock:make",
    "--kind",
    "lock",
    "--no-claim",
    "crash-liveness",
]


def test_a_lease_that_never_runs_out_leaves_safe_release_not_exercised(tmp_path, capsys):
    report = tmp_path / "check.json"
    code = main([*IMPL, "--check", "expiry", "--check", "stale-extend", "--json", str(report), "-q"])
    assert code == 0, capsys.readouterr().out
    (row,) = json.loads(report.read_text())["implementations"]
    checks = {c["check"]: c for c in row["checks"]}
    for name in ("expiry", "stale-extend"):
        assert checks[name]["status"] == "pass", checks[name]
        assert set(checks[name]["not_exercised"]) == {"safe-release"}, checks[name]
        assert checks[name]["detail"].startswith("not exercised: "), checks[name]["detail"]
    assert "outlives its" in checks["stale-extend"]["detail"]  # the control found the lease kept
    assert "never expired" in checks["expiry"]["detail"]


def test_positions_where_no_successor_got_in_are_named_and_the_others_still_count():
    ctx = SimpleNamespace(not_exercised={})
    done = "a holder stalled before each of the 3 round trip(s) of its extend left its successor's lease as it was"
    text = judged_positions(
        ctx, 3, "extend", {2: "the lease never expired (<key> (pttl 20931 ms))"}, LATE_RELEASE, done
    )
    assert ctx.not_exercised == {}, "two positions of three were judged"
    assert "(2 of 3 position(s); none did when stalled after round trip 2 of its 3-round-trip extend" in text
    text = judged_positions(ctx, 1, "release", {0: "the lease never expired"}, LATE_RELEASE, done)
    assert ctx.not_exercised == {"safe-release": LATE_RELEASE}
    assert text.startswith("not exercised: no successor took the lock at any of the 1 stall position(s)")
