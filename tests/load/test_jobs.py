"""The jobs workload (producers and consumers on a work queue): its end-of-run judgement, the drain,
the LPUSH/RPOP ceiling, and short Locust runs in their own process (Locust is never imported here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from contend.cli import main
from contend.impl import catalog
from contend.load.ceiling import measure_ceiling
from contend.load.metrics import LEDGER, Tally, redeliveries
from contend.load.queue import LEASE_MS, drain, judge, parse_item, queue_object
from contend.load.sweep import make_plan

ROOT = Path(__file__).resolve().parents[2]


def entry(**counts: int) -> list[int]:
    return [counts.get(column, 0) for column in LEDGER]


def test_a_job_put_and_never_completed_nor_drained_is_lost():
    ledger = {"u-1": entry(put=1, delivered=1, completed=1), "u-2": entry(put=1, delivered=1)}
    verdict = judge(ledger, {})
    assert not verdict.ok
    assert "1 of 2 job(s) lost" in verdict.lines[0] and "u-2" in verdict.lines[0]
    assert judge(ledger, {"u-2": 1}).ok  # it came out in the drain: not lost


def test_jobs_whose_fate_is_unknown_are_not_required_back():
    ledger = {
        "put-raised": entry(put_unknown=1),
        "late-ack": entry(put=1, delivered=1, ack_late=1),
        "ack-raised": entry(put=1, delivered=1, ack_unknown=1),
    }
    assert judge(ledger, {}).ok


def test_two_completions_or_a_completed_job_drained_again_fail():
    twice = judge({"u-1": entry(put=1, delivered=2, completed=2)}, {})
    assert not twice.ok and "completed twice" in twice.lines[0]
    again = judge({"u-1": entry(put=1, delivered=1, completed=1)}, {"u-1": 1})
    assert not again.ok and "came out again" in again.lines[0]


def test_an_item_never_put_is_a_phantom():
    assert "never put" in judge({"x": entry(delivered=1, completed=1)}, {}).lines[0]
    assert "never put" in judge({}, {"y": 1}).lines[0]


def test_redeliveries_count_deliveries_beyond_each_jobs_first():
    ledger = {"a": entry(put=1, delivered=3), "b": entry(put=1, delivered=1), "c": entry(put=1)}
    assert redeliveries(ledger) == (2, 2)
    tally = Tally("jobs", "list", ledger=ledger)
    assert tally.summary()["redeliveries_per_job"] == 1.0
    assert Tally.from_json(tally.to_json()).ledger == ledger


def test_items_carry_their_uid_and_put_time():
    assert parse_item(b"123.4-7|1700000000.250000") == ("123.4-7", 1700000000.25)
    assert parse_item("someone else's") == ("someone else's", None)


def test_the_drain_brings_back_a_job_whose_consumer_died(contend_client, ns):
    factory = catalog.by_name("list_queue").factory
    name = ns.key("jobs", "q0")
    producer = queue_object(factory, contend_client, name)
    assert producer.lease_ms == LEASE_MS
    producer.put("a-1|0")
    producer.put("a-2|0")
    dying = queue_object(factory, contend_client, name)
    assert dying.take(0) is not None  # taken, never acked: it comes back after its lease
    assert drain(factory, contend_client, [name]) == {"a-1": 1, "a-2": 1}


def test_the_lpush_rpop_ceiling_is_measured_on_a_key_of_the_run(contend_target, contend_client, ns):
    key = ns.key("ceiling")
    measured = measure_ceiling(contend_target.url, 2, 0.3, op="lpush-rpop", key=key)
    assert measured.per_second > 0
    assert "LPUSH+RPOP" in measured.method
    assert not contend_client.keys(f"{key}*")  # the loops delete what they pushed


def test_a_jobs_sweep_measures_the_lpush_rpop_ceiling():
    assert make_plan(workloads=["jobs"]).ceiling_ops() == ["lpush-rpop"]
    assert make_plan(workloads=["registry", "jobs"]).ceiling_ops() == ["ping", "lpush-rpop"]


def locust(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEND_", "LOCUST_"))}
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "locust",
            "-f",
            "loadtests/jobs.py",
            "--headless",
            "-u",
            "4",
            "-r",
            "4",
            *args,
        ],
        cwd=ROOT,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["", "stream", "tests.fixtures.foreign.lua_queue:make"])
def test_a_short_jobs_run_loses_nothing_and_reports_its_figures(contend_target, ns, tmp_path, strategy):
    summary = tmp_path / "summary.json"
    if ":" in strategy:
        chosen = ["--impl", strategy, "--kind", "queue"]
    else:
        chosen = ["--strategy", strategy] if strategy else []  # none: the jobs workload's default, list
    done = locust(
        "-t", "2s", "--redis-url", contend_target.url, "--namespace", ns.prefix,
        "--contend-json", str(summary), *chosen,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(summary.read_text())
    assert result["strategy"] == (strategy or "list")
    jobs = result["workloads"]["jobs"]
    assert jobs["ok"], jobs["verdict"]
    assert "nothing lost, nothing completed twice" in jobs["verdict"][0]
    figures = jobs["contend"]
    assert figures["commits"] > 0
    assert figures["latency_p50_ms"] is not None and figures["latency_p99_ms"] >= figures["latency_p50_ms"]
    # Every user's 5th take ends with its consumer's death: its job is delivered again (in the run,
    # or to the drain afterwards, which is not counted here).
    assert figures["redeliveries"] is not None and figures["jobs_delivered"] > 0


@pytest.mark.slow
def test_without_a_strategy_each_workload_runs_its_default(contend_target, ns, tmp_path):
    """The jobs workload has no `watch`: beside the counter (which runs watch) it runs list."""
    summary = tmp_path / "summary.json"
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEND_", "LOCUST_"))}
    done = subprocess.run(
        [
            sys.executable, "-m", "locust", "-f", "loadtests/counter.py,loadtests/jobs.py", "--headless",
            "-u", "4", "-r", "4", "-t", "2s", "--redis-url", contend_target.url, "--namespace", ns.prefix,
            "--contend-json", str(summary),
        ],
        cwd=ROOT, env=clean, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "counter/watch: invariant holds" in done.stderr and "jobs/list: invariant holds" in done.stderr
    workloads = json.loads(summary.read_text())["workloads"]
    assert workloads["counter"]["ok"] and workloads["jobs"]["ok"]


@pytest.mark.slow
def test_a_queue_that_loses_the_job_of_a_dead_consumer_fails_the_run(contend_target, ns):
    done = locust(
        "-t", "2s", "--redis-url", contend_target.url, "--namespace", ns.prefix, "--strategy", "brpop",
        env={"CONTEND_LOAD_KNOWN_BAD": "1"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert "INVARIANT BROKEN" in done.stderr and "job(s) lost" in done.stderr


@pytest.mark.slow
def test_a_queue_that_hands_every_job_out_twice_fails_the_run(contend_target, ns):
    done = locust(
        "-t", "2s", "--redis-url", contend_target.url, "--namespace", ns.prefix,
        "--impl", "tests.fixtures.twice_queue:make", "--kind", "queue",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert "INVARIANT BROKEN" in done.stderr and "job(s) completed twice" in done.stderr


@pytest.mark.slow
def test_contend_load_reports_jobs_against_the_lpush_rpop_ceiling(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "load"
    argv = ["load", "--workload", "jobs", "--strategy", "list", "--users", "2", "--hot-keys", "1"]
    assert main([*argv, "--duration", "1", "--ceiling-duration", "0.3", "--out", str(out)]) == 0
    sweep = json.loads((out / "raw" / "sweep.json").read_text())
    assert {c["op"] for c in sweep["ceiling"]} == {"lpush-rpop"}
    assert sweep["points"][0]["ceiling"] == "lpush-rpop"
    report = (out / "report.md").read_text()
    assert "Work queues: jobs per second, latency, redeliveries" in report
    row = next(line for line in report.splitlines() if line.startswith("| list | 2 | 1 |"))
    assert "×" in row and row.endswith("| ok |")
