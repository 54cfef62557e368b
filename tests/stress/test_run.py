"""`contend stress`: what the runs must show, that nothing outlives them, and bad input.

Each run is short (1-2 s of load) and forces its fault at the moment that
matters (a client pause while the worker holds the lease, a kill while one
does), so the outcome is the same every run.
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from contend.cli import main
from contend.history.checker import Linearizability
from contend.history.records import pair
from contend.stress.run import StressOptions, StressResult, merge, run_stress
from tests.target.test_server import wait_gone

ROOT = Path(__file__).resolve().parents[2]


def stress(tmp_path: Path, impl: str, **options) -> StressResult:
    options.setdefault("procs", 3)
    options.setdefault("duration", 1.5)
    result = run_stress(StressOptions(impl=impl, out=tmp_path, **options))
    assert_nothing_left(result.run_dir)
    return result


def assert_nothing_left(run_dir: Path) -> None:
    """Every worker and redis-server the run started is gone."""
    doc = json.loads((run_dir / "run.json").read_text())
    assert doc["finished"] and doc["workers"]
    assert doc["servers"] or doc["options"]["redis_url"]
    for pid in doc["workers"] + doc["servers"]:
        assert wait_gone(pid), f"process {pid} outlived the stress run"


def nemesis_lines(result: StressResult, f: str) -> list[str]:
    return [str(r.value) for r in result.nemesis if r.f == f]


def test_naive_registry_is_not_linearizable_under_plain_concurrency(tmp_path, capsys):
    result = stress(tmp_path, "naive", procs=4, duration=1.0)
    assert result.exit_code == 1
    assert result.verdict.outcome is Linearizability.NOT_LINEARIZABLE
    assert result.verdict.culprit is not None and result.verdict.culprit.f == "register"
    assert {v.check for v in result.violations} >= {"registry errors"}
    # The history is kept, and `contend history check` agrees.
    assert result.history.exists() and (result.run_dir / "timeline.html").exists()
    assert main(["history", "check", str(result.history), "--model", "registry"]) == 1
    assert "invariant violation" in capsys.readouterr().out


def test_token_lease_lets_two_holders_overlap_under_client_pause(tmp_path):
    result = stress(tmp_path, "token", ttl_ms=250, nemeses=("client-pause",), interval=0.2)
    assert result.exit_code == 1
    overlaps = [v for v in result.violations if v.check == "critical sections"]
    assert overlaps, result.violations
    # The earlier holder of the first overlap is a process the nemesis stopped while it held the lease.
    paused = nemesis_lines(result, "client-pause")
    assert any(f"process {overlaps[0].calls[0].process} " in line for line in paused if "start" in line)
    # The lease itself behaved as a lease: its model allows the expiry under the pause.
    assert result.verdict.outcome is Linearizability.LINEARIZABLE


def test_fenced_resource_rejects_the_paused_holders_write(tmp_path):
    result = stress(tmp_path, "fenced", ttl_ms=250, nemeses=("client-pause",), interval=0.2)
    assert result.exit_code == 0, result.headline()
    stale = [c for c in result.calls if c.f == "incr" and c.status == "fail"]
    assert stale, "the paused holder's write must reach the resource and be refused"
    assert all("StaleFencingTokenError" in str(c.completion.error) for c in stale if c.completion)
    started = [line for line in nemesis_lines(result, "client-pause") if line.startswith("start")]
    assert any(f"process {stale[0].process} " in line for line in started)


def test_lease_is_lost_after_a_restart_without_persistence(tmp_path, capsys):
    result = stress(tmp_path, "token", ttl_ms=2000, hold_ms=30, nemeses=("server-kill",), interval=0.3)
    assert result.exit_code == 1
    lost = [v for v in result.violations if v.check == "lease validity"]
    assert lost and "lost early" in lost[0].message
    assert any("persistence off" in line for line in nemesis_lines(result, "server-kill"))
    # The kept history re-checks exactly as the run checked it: same model, same invariants.
    command = result.recheck_command()
    assert command.endswith("--model mutex --lease-expiry --ttl-ms 2000")
    capsys.readouterr()
    assert main([*shlex.split(command)[1:], "--json", "-"]) == 1
    (doc,) = json.loads(capsys.readouterr().out)["files"]
    assert doc["invariants_checked"] == result.invariants
    assert "lease validity" in result.invariants and {v["check"] for v in doc["invariants"]} >= {
        "lease validity"
    }


@pytest.mark.slow
def test_lease_survives_a_restart_with_aof_always(tmp_path):
    result = stress(
        tmp_path,
        "token",
        ttl_ms=2000,
        hold_ms=30,
        nemeses=("server-kill",),
        interval=0.3,
        persistence="aof",
        appendfsync="always",
    )
    assert result.exit_code == 0, result.headline()
    assert any("appendfsync always" in line for line in nemesis_lines(result, "server-kill"))


@pytest.mark.slow
@pytest.mark.parametrize("impl", ["lua", "watch", "lock_first"])
def test_correct_registries_stay_linearizable_under_client_and_server_pauses(tmp_path, impl):
    result = stress(
        tmp_path, impl, nemeses=("client-pause", "server-pause"), interval=0.15, fault_ms=250, duration=1.5
    )
    assert result.exit_code == 0, result.headline()
    assert nemesis_lines(result, "client-pause") and nemesis_lines(result, "server-pause")


@pytest.mark.slow
def test_failover_loses_acknowledged_writes(tmp_path):
    result = stress(tmp_path, "lua", nemeses=("failover",), interval=0.3)
    assert result.exit_code == 1
    assert result.verdict.outcome is Linearizability.NOT_LINEARIZABLE or any(
        "not unique" in v.message for v in result.violations
    )
    (stop,) = [line for line in nemesis_lines(result, "failover") if line.startswith("stop")][:1]
    assert "replica promoted" in stop and "never reached it" in stop


def test_redis_url_gets_client_pause_and_a_clean_namespace(tmp_path, contend_target, contend_client):
    result = stress(
        tmp_path,
        "lua",
        procs=2,
        duration=1.0,
        redis_url=contend_target.url,
        nemeses=("server-pause",),
        interval=0.2,
        fault_ms=200,
    )
    assert result.exit_code == 0, result.headline()
    assert any("CLIENT PAUSE" in line for line in nemesis_lines(result, "server-pause"))
    run_id = result.run_dir.name.removeprefix("stress-")
    assert list(contend_client.scan_iter(match=f"contend:{run_id}:*")) == []


def test_cli_prints_the_verdict_and_keeps_the_history(tmp_path, capsys):
    code = main(["stress", "--only", "naive", "--processes", "3", "--duration", "0.8", "--out", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1
    assert "VIOLATION — not linearizable (registry)" in out
    (run_dir,) = tmp_path.iterdir()
    assert f"history:  {run_dir / 'history.jsonl'}" in out.replace("\n", "")
    verdict = json.loads((run_dir / "verdict.json").read_text())
    assert verdict["command"] == "stress" and verdict["verdict"] == "violation" and verdict["exit_code"] == 1
    assert not (run_dir / "workers").exists(), "the workers' raw files are merged, then removed"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--only", "nosuch"], "no such implementation; stress runs: naive"),
        (["--only", "semaphore"], "is a semaphore; stress runs the registry and lock families"),
        (["--only", "lua", "--processes", "0"], "--processes must be between 1 and 256, got 0"),
        ([], "which implementation? give --only NAME"),
        (["--only", "lua", "--impl", "x:y"], "give one of them"),
        (["--only", "lua", "--duration", "0"], "--duration must be > 0 seconds"),
        (["--only", "lua", "--nemesis", "chaos"], "unknown nemesis 'chaos': expected one of client-pause"),
        (
            [
                "--only",
                "lua",
                "--nemesis",
                "client-pause,server-kill",
                "--redis-url",
                "redis://127.0.0.1:1/0",
            ],
            "--nemesis server-kill kills a server, and contend never kills a server it did not start",
        ),
        (
            ["--only", "lua", "--nemesis", "failover", "--redis-url", "redis://127.0.0.1:1/0"],
            "drop --redis-url to use the embedded server",
        ),
        (
            ["--only", "lua", "--persistence", "aof", "--redis-url", "redis://127.0.0.1:1/0"],
            "--persistence configures the embedded server",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    assert main(["stress", *args, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert message in " ".join(err.split())
    assert err.count("contend:") == 1 and "Traceback" not in err and "warning" not in err
    assert not any(tmp_path.iterdir()), "nothing starts on bad input"


# --------------------------------------------------------------------------- interrupted runs


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return "?"


def _start_cli(tmp_path: Path, nemesis: str) -> tuple[subprocess.Popen[str], dict, int]:
    """A stress run in a child process, returned once the nemesis holds a process stopped."""
    cmd = [
        *(sys.executable, "-m", "contend.cli", "stress", "--only", "lua", "--processes", "2"),
        *("--duration", "60", "--nemesis", nemesis, "--interval", "0.1", "--fault-ms", "20000"),
        *("--out", str(tmp_path), "--no-html"),
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        manifests = list(tmp_path.glob("stress-*/run.json"))
        if manifests:
            doc = json.loads(manifests[0].read_text())
            stopped = [p for p in doc["workers"] + doc["servers"] if _state(p) == "T"]
            if doc["workers"] and stopped:
                return child, doc, stopped[0]
        if child.poll() is not None:
            break
        time.sleep(0.05)
    child.kill()
    out, err = child.communicate()
    raise AssertionError(f"no process was ever stopped by {nemesis}: {out}\n{err}")


@pytest.mark.slow
@pytest.mark.parametrize("nemesis", ["client-pause", "server-pause"])
def test_ctrl_c_resumes_and_stops_everything(tmp_path, nemesis):
    child, doc, stopped = _start_cli(tmp_path, nemesis)
    try:
        assert stopped in (doc["workers"] if nemesis == "client-pause" else doc["servers"])
        child.send_signal(signal.SIGINT)
        _, err = child.communicate(timeout=30)
        assert child.returncode == 130, err
        assert "interrupted" in err
        for pid in doc["workers"] + doc["servers"]:
            assert wait_gone(pid), f"process {pid} outlived an interrupted run"
        (run_dir,) = tmp_path.iterdir()
        history = (run_dir / "history.jsonl").read_text()
        assert f'"f":"{nemesis}"' in history, "the history so far is kept"
    finally:
        child.kill()
        child.wait()


def test_workers_and_server_die_with_a_killed_parent(tmp_path):
    child, doc, _ = _start_cli(tmp_path, "client-pause")
    try:
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        for pid in doc["workers"] + doc["servers"]:
            assert wait_gone(pid), f"process {pid} outlived its parent's SIGKILL"
    finally:
        child.kill()
        child.wait()


def test_worker_clients_do_not_resend(contend_target):
    """A lost reply must surface (as info), not be retried behind the worker's back."""
    from contend.stress.workers import connect

    client = connect(contend_target.url, 0.5)
    try:
        assert client.get_retry() is None or client.get_retry()._retries == 0
        assert client.connection_pool.connection_kwargs["socket_timeout"] == 0.5
        assert client.ping() is True
    finally:
        client.close()


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
