"""What is checked follows what is claimed: a lock without a lease is not judged for crash liveness
by the burst's crashed-holder rounds or the lost-reply check's "then it died", unless it claims it."""

from __future__ import annotations

from contend.cli import main

IMPL = ["check", "--impl", "tests.check.no_lease_lock:make", "--kind", "lock", "--check", "burst"]
ALSO = ["--check", "lost-reply", "--no-claim", "clock-skew-safe", "--no-claim", "stale-grant"]


def test_a_lock_without_a_lease_is_not_judged_for_crash_liveness_it_does_not_claim(capsys):
    assert main([*IMPL, *ALSO, "--no-claim", "crash-liveness"]) == 0, capsys.readouterr().out


def test_it_is_when_it_claims_it(capsys):
    assert main([*IMPL, *ALSO]) == 1
    assert "crash-liveness" in capsys.readouterr().out
