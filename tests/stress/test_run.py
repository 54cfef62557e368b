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
from contend.history.records import pair
from contend.history.verdict import Linearizability
from contend.stress.history import merge
from contend.stress.options import StressOptions
from contend.stress.result import StressResult
from contend.stress.run import run_stress
from tests.servers.test_server import wait_gone

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
    # The naive registry with its check-then-act window held open for 5 ms (the catalog's own was
    # once not caught in a CI run of a second: its window is microseconds wide in real time).
    naive = "tests.fixtures.stalling_naive_registry:make"
    result = stress(tmp_path, naive, kind="registry", procs=4, duration=1.0)
    assert result.exit_code == 1
    assert result.verdict.outcome is Linearizability.NOT_LINEARIZABLE
    # The first call no linearization explains: a register, or a read (reverse, lookup) that saw a
    # half-done registration; which one depends on the interleaving the run happened to get.
    assert result.verdict.culprit is not None and result.verdict.culprit.f in {
        "register",
        "reverse",
        "lookup",
    }
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
    # The run says why, as check does not see it: the pause that outlived the lease, fencing.
    why = result.explanation
    assert why and f"stopped process {overlaps[0].calls[0].process} for " in why[0], why
    assert "longer than its 250 ms lease" in why[0]
    assert "only fencing protects the resource" in why[1]
    assert "--only fenced" in why[2] and "--claim fencing" in why[2]


def test_fenced_resource_rejects_the_paused_holders_write(tmp_path):
    result = stress(tmp_path, "fenced", ttl_ms=250, nemeses=("client-pause",), interval=0.2)
    assert result.exit_code == 0, result.headline()
    assert result.explanation == []
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
    code = main(
        ["stress", "--only", "naive", "--processes", "3", "--duration", "0.8", "--out", str(tmp_path)]
    )
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
        (["--only", "semaphore"], "is a semaphore; stress runs the registry, lock and transaction families"),
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
        (["--only", "lua", "--cluster", "2"], "--cluster 2: a cluster needs 3 to 16 masters"),
        (["--only", "seed_layout", "--cluster", "3"], "--only seed_layout cannot run on a Redis Cluster"),
        (["--only", "token", "--nemesis", "reshard"], "--nemesis reshard needs an embedded Redis Cluster"),
        (
            ["--only", "token", "--cluster", "3", "--nemesis", "server-kill"],
            "--nemesis server-kill acts on one server; on a cluster (--cluster) use reshard",
        ),
        (
            ["--only", "token", "--nemesis", "failover,sentinel-failover"],
            "give one of them",
        ),
        (
            ["--only", "token", "--nemesis", "sentinel-failover", "--redis-url", "redis://127.0.0.1:1/0"],
            "--nemesis sentinel-failover kills a server",
        ),
        (["--only", "redlock", "--masters", "4"], "--masters 4: Redlock needs an odd number of masters"),
        (["--only", "token", "--masters", "5"], "--masters runs a lock over independent masters"),
        (["--only", "token", "--nemesis", "partition"], "--nemesis partition acts on Redlock's masters"),
        (
            ["--only", "redlock", "--nemesis", "server-kill"],
            "--nemesis server-kill does not act on Redlock's masters",
        ),
        (
            ["--only", "token", "--cluster", "3", "--redis-url", "redis://127.0.0.1:1/0"],
            "--cluster starts an embedded cluster and --redis-url names a server",
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


# --------------------------------------------------------------------------- a user's implementation


def stress_cli(tmp_path: Path, *args: str) -> tuple[int, dict, str]:
    """`contend stress ARGS` through main(): (exit code, the --json document, stdout)."""
    doc_path = tmp_path / "doc.json"
    out_dir = tmp_path / "runs"
    code = main(["stress", *args, "--out", str(out_dir), "--no-html", "--json", str(doc_path)])
    doc = json.loads(doc_path.read_text())
    (run_dir,) = out_dir.iterdir()
    assert_nothing_left(run_dir)
    assert json.loads((run_dir / "verdict.json").read_text())["impl"] == doc["impl"]
    return code, doc, str(run_dir)


@pytest.mark.parametrize(
    ("module", "fencing"),
    [("return_fenced_lock", "acquire's return"), ("attr_fenced_lock", "the fencing_token attribute")],
)
def test_user_fenced_lock_refuses_the_paused_holders_write(tmp_path, module, fencing):
    spec = f"tests.fixtures.foreign.{module}:make"
    code, doc, _ = stress_cli(
        tmp_path,
        *("--impl", spec, "--kind", "lock", "--processes", "3", "--duration", "1.5"),
        *("--ttl-ms", "250", "--nemesis", "client-pause", "--interval", "0.2"),
    )
    assert code == 0, doc["linearizability"]
    assert doc["impl"] == spec and doc["family"] == "lock" and doc["user_implementation"]
    assert doc["fencing"] == fencing and "fencing tokens" in doc["invariants"]
    assert doc["verdict"] == "valid" and not doc["no_fault"]
    assert any(e["value"].startswith("start") for e in doc["nemesis_events"])


@pytest.mark.slow
def test_user_lock_mutant_is_caught(tmp_path, capsys):
    # make_met: its first two acquirers meet between EXISTS and SET, so the race is forced.
    spec = "tests.fixtures.foreign.check_then_set_lock:make_met"
    code, doc, _ = stress_cli(
        tmp_path, "--impl", spec, "--kind", "lock", "--processes", "4", "--duration", "1"
    )
    out = capsys.readouterr().out
    assert code == 1 and doc["verdict"] == "violation"
    assert doc["fencing"] is None
    assert {v["check"] for v in doc["violations"]} >= {"critical sections"}
    assert f"contend stress {spec} (lock)" in out
    assert "no fencing token" in out and "writes go straight to the counter" in out


@pytest.mark.parametrize(("factory", "expected"), [("make_gappy", 1), ("make", 0)])
@pytest.mark.slow
def test_user_registry(tmp_path, factory, expected):
    # make_gappy skips every fifth id by construction: the run must find it whether or not the
    # processes happened to race (the naive registry's race had to happen in real time).
    spec = f"tests.fixtures.user_registry:{factory}"
    code, doc, _ = stress_cli(
        tmp_path, "--impl", spec, "--kind", "registry", "--processes", "4", "--duration", "1"
    )
    assert code == expected, doc["linearizability"]
    assert doc["impl"] == spec and doc["family"] == "registry" and doc["fencing"] is None
    if expected:
        assert doc["linearizability"]["outcome"] == "not linearizable" or doc["violations"]


def test_user_module_in_the_current_directory(tmp_path, monkeypatch):
    """As with `contend check`, the current directory is importable, in every worker too."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "stress_user_registry.py").write_text(
        "from contend.impl.registry import LuaRegistry\n\n\n"
        "def make(client, namespace):\n"
        "    return LuaRegistry(client, namespace)\n"
    )
    monkeypatch.chdir(project)
    code, doc, _ = stress_cli(
        tmp_path,
        *("--impl", "stress_user_registry:make", "--kind", "registry", "--processes", "2"),
        *("--duration", "0.5"),
    )
    assert code == 0 and doc["counts"]["ok"] > 0


def test_a_nemesis_that_injected_no_fault_says_why_and_a_violation_stands(tmp_path, capsys):
    """No worker ever holds this lock, so no client pause is ever due: the run is kept and checked;
    it did not test what was asked, but the violation its history shows (an acquire of a free
    lock refused) stands: exit 1, not 3."""
    junit = tmp_path / "junit.xml"
    code, doc, run_dir = stress_cli(
        tmp_path,
        *("--impl", "tests.stress.user_impls:never_granted", "--kind", "lock", "--processes", "2"),
        *("--duration", "1.2", "--ttl-ms", "250", "--nemesis", "client-pause", "--interval", "0.2"),
        *("--junit-xml", str(junit)),
    )
    out = " ".join(capsys.readouterr().out.split())
    assert doc["history_verdict"] == "violation" and code == 1
    reason = "--nemesis client-pause injected no fault: no worker held the lock when a pause was due"
    assert doc["verdict"] == "no-fault" and doc["exit_code"] == 1
    assert doc["no_fault"] and doc["no_fault"][0].startswith(reason)
    assert doc["nemesis_events"] == []
    assert f"NO FAULT — {reason}" in out and "exit 1: the history shows a violation, which stands" in out
    assert "linearizability:" in out, "the history's own verdict is printed too"
    assert Path(run_dir, "history.jsonl").exists()
    assert json.loads(Path(run_dir, "verdict.json").read_text())["verdict"] == "no-fault"
    xml = junit.read_text()
    assert 'name="nemesis"' in xml and "<error" in xml and "injected no fault" in xml


def test_a_run_whose_fault_never_took_effect_is_inconclusive_unless_it_found_a_violation():
    from contend.stress.result import StressResult

    def result(no_fault: list[str]) -> StressResult:
        return StressResult(None, None, "", Path(), Path(), None, [], [], [], 0.0, no_fault=no_fault)  # type: ignore[arg-type]

    assert result([]).exit_code == 0
    assert result(["--nemesis cluster-failover injected no fault: it never took effect"]).exit_code == 3


def test_no_fault_reasons():
    """Why a nemesis injected nothing, from what the nemesis saw during the run."""
    import multiprocessing

    from contend.stress.board import Board
    from contend.stress.nemesis import Nemesis, NemesisContext

    board = Board.create(multiprocessing.get_context("spawn"), 1, "redis://127.0.0.1:1/0")
    ctx = NemesisContext(deployment=None, board=board, pids=[0], record=lambda f, t: None, lock=True)  # type: ignore[arg-type]
    nemesis = Nemesis(["client-pause", "server-pause"], ctx, interval=1.0)
    assert "the first fault comes after --interval 1 s" in nemesis.why_none(
        "client-pause", ran=1.0, duration=1.0
    )
    assert "workers stopped after 0.2 s" in nemesis.why_none("client-pause", ran=0.2, duration=3.0)
    nemesis.faults[0].begun = 1
    assert "the faults take turns" in nemesis.why_none("server-pause", ran=3.0, duration=3.0)
    nemesis.faults[1].unfit = 3
    assert "no longer fit" in nemesis.why_none("server-pause", ran=3.0, duration=3.0)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--impl", "tests.fixtures.user_registry:make"],
            "needs --kind: the protocol it follows (registry, lock or transaction)",
        ),
        (
            ["--impl", "tests.fixtures.foreign.zset_semaphore:make", "--kind", "semaphore"],
            "--kind semaphore: stress runs the registry, lock and transaction families; check a semaphore with "
            "`contend check --impl tests.fixtures.foreign.zset_semaphore:make --kind semaphore`",
        ),
        (
            ["--impl", "tests.fixtures.foreign.flight:make", "--kind", "single-flight"],
            "--kind single-flight: stress runs the registry, lock and transaction families",
        ),
        (["--impl", "tests.fixtures.nosuch:make", "--kind", "lock"], "cannot import 'tests.fixtures.nosuch'"),
        (
            ["--impl", "tests.fixtures.user_registry:nosuch", "--kind", "registry"],
            "has no attribute 'nosuch'",
        ),
        (
            ["--impl", "tests.fixtures.user_registry:NOT_CALLABLE", "--kind", "registry"],
            "not a callable factory",
        ),
        (
            ["--impl", "tests.fixtures.user_registry:wrong_arity", "--kind", "registry"],
            "a registry factory is called as factory(client: redis.Redis, namespace: str)",
        ),
        (
            ["--impl", "tests.fixtures.user_registry:make", "--kind", "lock"],
            "a lock factory is called as factory(client: redis.Redis, key: str, ttl_ms: int)",
        ),
        (
            ["--impl", "tests.fixtures.user_registry:broken", "--kind", "registry"],
            "returned a HalfRegistry without lookup(name)",
        ),
        (["--impl", "tests.stress.user_impls:no_release", "--kind", "lock"], "without release()"),
        (["--only", "token", "--kind", "lock"], "--kind lock names the protocol of --impl; give --impl"),
        (["--kind", "lock"], "--kind lock names the protocol of --impl; give --impl MODULE:FACTORY too"),
        (
            ["--only", "token", "--nemesis", "client-pause", "--duration", "1"],
            "--nemesis client-pause cannot inject a fault: the run lasts 1 s, and its first fault comes after "
            "--interval 1 s and lasts at least 750 ms; raise --duration or lower --interval",
        ),
        (
            ["--only", "lua", "--nemesis", "server-kill", "--duration", "0.5", "--interval", "0.5"],
            "--nemesis server-kill cannot inject a fault: the run lasts 0.5 s",
        ),
        (
            [
                "--only",
                "lua",
                "--nemesis",
                "client-pause,server-pause",
                "--duration",
                "2",
                "--interval",
                "0.5",
            ],
            "--nemesis server-pause cannot inject a fault: the run lasts 2 s, and its first fault comes after "
            "1.5 s at the earliest (faults take turns, --interval 0.5 s apart, and client-pause comes first)",
        ),
    ],
)
def test_bad_user_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    assert main(["stress", *args, "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert message in " ".join(err.split())
    assert err.count("contend:") == 1 and "Traceback" not in err and "warning" not in err
    assert not any(tmp_path.iterdir()), "nothing starts on bad input"
