"""Locks over independent masters (`contend check --masters N`, issue 26): the user's own, called as
factory(clients, key, ttl_ms); bad input refused before anything runs; one-defect mutants caught for
the property their defect breaks, and correct locks in other styles passing."""

from __future__ import annotations

import dataclasses

import pytest

from contend.check.battery import run_battery
from contend.check.framework import CheckOptions
from contend.cli import main
from contend.impl.catalog import MUTUAL_EXCLUSION, SAFE_RELEASE, STALE_GRANT
from contend.machines.base import PropertyViolated
from contend.machines.family import family_machine
from contend.servers.target import open_target
from contend.subject.protocols import ProtocolError
from contend.subject.resolve import user_subject
from tests.fixtures import masters
from tests.machines.helpers import driven_by_hand, step_while

#: A user's lock gets `schedule_examples` whether it is correct or not: 150 for a mutant to be
#: caught, 80 for a correct lock (`contend check` runs 60; 150 took 15 s a lock here).
OPTIONS = CheckOptions(shrink=False, schedule_examples=150, burst_rounds=4, model_ops=100)
CORRECT_OPTIONS = dataclasses.replace(OPTIONS, schedule_examples=80)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--masters", "4"], "an odd number of masters from 3 to 9"),
        (["--masters", "1"], "an odd number of masters from 3 to 9"),
        (["--masters", "11"], "an odd number of masters from 3 to 9"),
        (["--masters", "3", "--cluster", "3"], "choose one"),
        (["--masters", "3", "--family", "lock"], "drop --family and --only"),
        (
            ["--masters", "3", "--impl", "tests.fixtures.masters.vote_lock:make", "--kind", "registry"],
            "--kind registry is not a lock",
        ),
        (
            ["--masters", "3", "--redis-url", "redis://127.0.0.1:1/0"],
            "--redis-url given 1 time(s): give it once per master",
        ),
        (["--redis-url", "redis://127.0.0.1:1/0", "--redis-url", "redis://127.0.0.1:2/0"], "given 2 times"),
        (
            ["--masters", "3", "--impl", "tests.fixtures.masters.one_client_lock:make", "--kind", "lock"],
            "its first parameter is annotated as one client",
        ),
    ],
)
def test_bad_masters_input_is_one_line_and_exit_2(args, message, capsys):
    assert main(["check", *args]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_factory_that_uses_the_list_as_one_client_is_refused():
    with open_target(masters=3) as target, pytest.raises(ProtocolError, match="used the list as one client"):
        user_subject("tests.fixtures.masters.one_client_lock:make_unannotated", "lock", target)


def run(module: str, checks: list[str], options: CheckOptions = OPTIONS):
    with open_target(masters=3) as target:
        subject = user_subject(f"tests.fixtures.masters.{module}:make", "lock", target)
        run_ns = target.namespace(client=target.client())
        try:
            (row,) = run_battery(target, [subject], options, run_ns, only_checks=checks)
        finally:
            run_ns.cleanup()
    return row


@pytest.mark.slow
@pytest.mark.parametrize(
    ("module", "checks", "broken"),
    [
        ("half_quorum_lock", ["schedule"], {MUTUAL_EXCLUSION, STALE_GRANT}),
        ("ageless_redlock", ["schedule"], {STALE_GRANT, MUTUAL_EXCLUSION}),
        ("blind_release_redlock", ["expiry"], {SAFE_RELEASE}),
        ("any_extend_redlock", ["schedule"], {STALE_GRANT, MUTUAL_EXCLUSION, SAFE_RELEASE}),
    ],
)
def test_a_multi_master_mutant_is_caught(module, checks, broken):
    row = run(module, checks)
    found = {r.prop for r in row.failed}
    assert found, f"{module} passed {checks}: {[r.detail for r in row.results]}"
    assert found <= broken, f"{module} was reported for {found - broken}: {[r.detail for r in row.failed]}"


@pytest.mark.slow
@pytest.mark.parametrize("module", masters.CORRECT)
def test_a_correct_multi_master_lock_passes_the_state_machine_and_lost_replies(module):
    row = run(module, ["schedule", "lost-reply"], CORRECT_OPTIONS)
    assert row.verdict == "pass", {r.check: r.detail for r in row.results if not r.passed}


def test_a_stale_release_of_its_own_copy_is_not_blamed_for_a_broken_quorum(monkeypatch):
    """Forced schedule on half_quorum_lock (one vote of three grants): c0 holds, extends, and a
    stall lets its copy on master 3 run out, which its extend takes again; c0's release starts,
    a second stall ends its lease, c1 wins masters 1 and 2. c0's release then drops only its own
    copy on master 3, and a third client wins master 3 alone: the quorum's defect (mutual
    exclusion), not an unsafe release (the release left c1's copies as they were)."""
    monkeypatch.setattr("contend.machines.base.note", lambda text: None)  # outside Hypothesis
    with open_target(masters=3) as target:
        subject = user_subject("tests.fixtures.masters.half_quorum_lock:make", "lock", target)
        lock = {"stall": False, "crash_after": None, "hold": False, "pause_in_acquire": None}
        with driven_by_hand(family_machine(subject)(target)) as m:
            m.acquire(client=0, stall_inside=2, extend=True, **lock)
            step_while(m, 0, "acquire(", "extend(")
            m.stall()
            m.acquire(client=1, stall_inside=None, extend=False, **lock)
            step_while(m, 1, "acquire(")
            with pytest.raises(PropertyViolated) as info:
                step_while(m, 0, "release(")
    assert info.value.property == MUTUAL_EXCLUSION, info.value.detail
    assert "changed only keys that held its own token" in info.value.detail


def test_a_row_whose_target_spans_masters_gets_the_longer_leases(contend_target, ns):
    """A scoreboard row over several masters (pottery-3) is a one-client factory whose adapter
    builds the lock over the target's other masters: its subject does not say `masters`, its
    target does. Its real-time checks' leases are MASTERS_SCALE times as long, as `--masters`
    rows' are: at 250 ms, three round trips and a connection per master each acquire left the
    model check inconclusive on a busy machine (three runs of three, load average 10)."""
    from contend.check.framework import MASTERS_SCALE, CheckContext

    spans = dataclasses.replace(contend_target, also=("redis://127.0.0.1:1/0",) * 2)
    one = CheckContext(contend_target, ns, lambda *a: None, OPTIONS)
    spanning = CheckContext(spans, ns, lambda *a: None, OPTIONS)
    assert one.ttl(250) == 250
    assert spanning.ttl(250) == 250 * MASTERS_SCALE
