"""Queues written for redis.asyncio: the queue battery's checks and machine, shared with synchronous
queues, pass correct async queues (the catalog's and one in another style) and catch the known-bad
ones for what they break."""

from __future__ import annotations

from contend.check.battery import checks_for, run_battery
from contend.check.framework import CheckOptions
from contend.impl import catalog
from contend.subject.resolve import user_subject
from contend.subject.subject import catalog_subjects

OPTIONS = CheckOptions(shrink=False, schedule_examples=30, model_ops=100)


def test_an_async_queue_gets_the_whole_queue_battery(contend_target):
    (subject,) = catalog_subjects(["queue"], ["async_stream_queue"])
    assert subject.asynchronous
    assert [c.name for c in checks_for(subject)] == [
        "model",
        "burst",
        "unknown-ack",
        "stale-holder",
        "bad-input",
        "schedule",
    ]


def test_an_async_queue_in_another_style_passes_and_its_mutant_is_caught(contend_target, ns):
    good = user_subject(
        "tests.fixtures.async_foreign.lua_queue:make", "queue", contend_target, claim=["fifo"]
    )
    assert good.asynchronous and good.capabilities.extend and good.capabilities.nack
    assert good.capabilities.lease_ms == 5_000
    (row,) = run_battery(contend_target, [good], OPTIONS, ns)
    assert row.verdict == "pass", {r.check: r.detail for r in row.results if not r.passed}
    bad = user_subject("tests.fixtures.async_foreign.lua_queue:make_any_nack", "queue", contend_target)
    (row,) = run_battery(contend_target, [bad], OPTIONS, ns, only_checks=["model", "stale-holder"])
    assert [r.check for r in row.failed] == ["stale-holder"]
    assert {r.prop for r in row.failed} == {catalog.NO_DOUBLE_DELIVERY}


def test_the_async_catalog_queues_quick_checks(contend_target, ns):
    (good,) = catalog_subjects(["queue"], ["async_stream_queue"])
    (row,) = run_battery(
        contend_target, [good], OPTIONS, ns, only_checks=["model", "burst", "unknown-ack", "bad-input"]
    )
    assert row.verdict == "pass", {r.check: r.detail for r in row.results}


def test_an_async_lock_without_a_lease_is_judged_for_crash_liveness_only_when_it_claims_it(
    contend_target, ns
):
    """The async lost-reply check asked every lock to be free again a few TTLs after a lost reply,
    crash liveness unclaimed or not (a false alarm on arq's job uniqueness): now, as the sync check
    does, only a lock that claims it."""
    fixture = "tests.fixtures.async_foreign.no_ttl_lock:make"
    unclaimed = ("safe-release", "crash-liveness", "clock-skew-safe", "stale-grant")
    lock = user_subject(fixture, "lock", contend_target, no_claim=unclaimed)
    (row,) = run_battery(contend_target, [lock], OPTIONS, ns, only_checks=["lost-reply"])
    assert row.verdict == "pass", {r.check: r.detail for r in row.results}
    claimed = user_subject(fixture, "lock", contend_target)
    (row,) = run_battery(contend_target, [claimed], OPTIONS, ns, only_checks=["lost-reply"])
    assert {r.prop for r in row.failed} == {catalog.CRASH_LIVENESS}


def test_load_refuses_an_async_queue_in_one_line(capsys, tmp_path, monkeypatch):
    """`contend load` runs redis-py queues only: an async one is refused before any run (exit 2),
    saying which command checks it, and no report is written."""
    from contend.cli import main

    monkeypatch.chdir(tmp_path)
    impl = "tests.fixtures.async_foreign.lua_queue:make"
    argv = [
        "load",
        "--workload",
        "jobs",
        "--impl",
        impl,
        "--kind",
        "queue",
        "--users",
        "1",
        "--hot-keys",
        "1",
    ]
    assert main([*argv, "--duration", "1"]) == 2
    err = capsys.readouterr().err
    assert "take() is a coroutine" in err and f"contend check --impl {impl} --kind queue" in err
    assert "Traceback" not in err and not list(tmp_path.iterdir())
