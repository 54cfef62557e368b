"""The locustfiles, run headless by Locust in its own process (Locust must never be imported here).

Each workload's short run must keep its invariant; a known-bad strategy must
make the run exit non-zero; bad options are one line and exit code 2.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import redis

ROOT = Path(__file__).resolve().parents[2]
#: Users' implementations (tests/fixtures), imported by Locust from its current directory.
LOCK = "tests.fixtures.foreign.redispy_lock:make"
MUTANT_LOCK = "tests.fixtures.two_holder_lock:make"
REGISTRY = "tests.fixtures.user_registry:make"
#: A registry that breaks gap-free ids by construction: no race has to happen in real time.
RACY_REGISTRY = "tests.fixtures.user_registry:make_gappy"
REFUSING_REGISTRY = "tests.fixtures.user_registry:make_refusing"


def locust(
    *args: str, env: dict[str, str] | None = None, timeout: float = 90
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEND_", "LOCUST_"))}
    return subprocess.run(
        [sys.executable, "-m", "locust", *args],
        cwd=ROOT,
        env={**clean, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def headless(locustfile: str, *args: str, users: int = 4, seconds: int = 3) -> list[str]:
    return [
        "-f",
        f"loadtests/{locustfile}",
        "--headless",
        "-u",
        str(users),
        "-r",
        str(users),
        "-t",
        f"{seconds}s",
        *args,
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("locustfile", "strategy"),
    [("registry.py", "lock_first"), ("counter.py", "watch"), ("transfer.py", "fine_locks")],
)
def test_each_workload_keeps_its_invariant(contend_target, ns, tmp_path, locustfile, strategy):
    summary = tmp_path / "summary.json"
    done = locust(
        *headless(locustfile),
        "--redis-url", contend_target.url, "--namespace", ns.prefix, "--strategy", strategy,
        "--contend-json", str(summary), "--csv", str(tmp_path / "run"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(summary.read_text())
    assert result["ok"]
    (workload,) = result["workloads"].values()
    assert workload["ok"], workload["verdict"]
    assert workload["contend"]["commits"] > 0  # it ran; how fast is a benchmark's question
    assert workload["contend"]["users"] == 4
    # Every finished operation is a Locust request; one cut short at the end (at most one per user) is not.
    assert workload["locust"]["requests"] >= workload["contend"]["commits"] - 4
    # Microsecond resolution: sub-millisecond medians survive, in the stats and in the CSV.
    assert 0 < workload["locust"]["p50_ms"] < 100
    assert (tmp_path / "run_stats.csv").is_file()
    if strategy != "watch":
        assert workload["contend"]["lock_wait_mean_ms"] is not None
    assert ns.count() == 0, "the run namespace is deleted at the end"


@pytest.mark.slow
def test_a_known_bad_strategy_fails_the_run(contend_target, ns, tmp_path):
    summary = tmp_path / "summary.json"
    done = locust(
        *headless("counter.py", users=8),
        "--redis-url", contend_target.url, "--namespace", ns.prefix, "--strategy", "naive",
        "--contend-json", str(summary),
        env={"CONTEND_LOAD_KNOWN_BAD": "1"},
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert "INVARIANT BROKEN" in done.stderr and "lost updates" in done.stderr
    assert not json.loads(summary.read_text())["ok"]
    assert ns.count() == 0


@pytest.mark.slow
def test_no_arguments_start_and_stop_an_embedded_server(tmp_path):
    summary = tmp_path / "summary.json"
    done = locust(*headless("counter.py", users=2, seconds=2), "--contend-json", str(summary))
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(summary.read_text())
    assert result["ok"] and result["redis"].startswith("embedded")
    port = int(result["redis"].split(" at ")[1].split(":")[1].split()[0])
    with pytest.raises(redis.ConnectionError):
        redis.Redis(port=port, socket_connect_timeout=1).ping()


@pytest.mark.slow
def test_a_slow_start_up_does_not_eat_the_run_time(contend_target, ns, tmp_path):
    """The locustfile's import holds the CPU for 2.5 s (a busy machine's start-up, made certain):
    the 1 s run still runs. (Locust's --run-time timer read gevent's clock, which had stood still
    through the start-up, and such a run ended at once: no request, exit 0, no summary.)"""
    summary = tmp_path / "summary.json"
    done = locust(
        "-f", "tests/fixtures/slow_start_locustfile.py", "--headless", "-u", "2", "-r", "2", "-t", "1s",
        "--redis-url", contend_target.url, "--namespace", ns.prefix, "--contend-json", str(summary),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    (workload,) = json.loads(summary.read_text())["workloads"].values()
    assert workload["ok"] and workload["contend"]["commits"] > 0
    assert ns.count() == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategy", "nope"], "--strategy 'nope' is unknown to the counter workload"),
        (["--hot-keys", "0"], "--hot-keys must be a whole number > 0, got 0"),
        (["--ttl-ms", "-1"], "--ttl-ms must be a whole number > 0"),
        (["--redis-url", "redis://127.0.0.1:1/0"], "cannot reach Redis at redis://127.0.0.1:1/0"),
        (["--impl", "nope.mod:make", "--kind", "lock"], "--impl 'nope.mod:make': cannot import 'nope.mod'"),
        (["--impl", LOCK, "--kind", "lock", "--strategy", "watch"], "and --strategy watch: choose one"),
        (["--impl", LOCK, "--kind", "semaphore"], "not a semaphore; check it with contend check --impl"),
        (["--impl", LOCK], "needs --kind: the protocol it follows (lock, registry, rate-limiter or queue"),
        (["--impl", REGISTRY, "--kind", "registry"], "it runs in the registry workload, not in counter"),
        (["--kind", "lock"], "--kind lock names the protocol of --impl"),
        # A port of its own: Locust's master binds it before contend is asked (5557 may be taken).
        (
            ["--master", "--master-bind-port", "FREE"],
            "--master without --redis-url: the embedded redis-server would listen on 127.0.0.1",
        ),
    ],
)
def test_bad_options_are_one_line_and_exit_2(args, message):
    args = [str(free_port()) if a == "FREE" else a for a in args]
    done = locust(*headless("counter.py", seconds=1), *args, timeout=30)
    assert done.returncode == 2
    lines = [line for line in done.stderr.splitlines() if line.startswith("contend:")]
    assert len(lines) == 1 and message in lines[0], done.stderr


@pytest.mark.slow
def test_a_namespace_that_holds_keys_is_refused(contend_target, client, ns):
    client.set(ns.key("mine"), "user data")
    done = locust(
        *headless("counter.py", seconds=1), "--redis-url", contend_target.url, "--namespace", ns.prefix,
        timeout=30,
    )  # fmt: skip
    assert done.returncode == 2
    assert "already holds keys" in done.stderr
    assert client.get(ns.key("mine")) == b"user data"


@pytest.mark.slow
def test_a_users_lock_protects_counter_and_transfer_in_worker_processes(contend_target, ns, tmp_path):
    """--impl travels to Locust's worker processes (--processes 2), which import it themselves."""
    summary = tmp_path / "summary.json"
    done = locust(
        "-f", "loadtests/counter.py,loadtests/transfer.py", "--headless", "-u", "4", "-r", "4", "-t", "2s",
        "--processes", "2", *own_master_port(), "--redis-url", contend_target.url, "--namespace", ns.prefix,
        "--impl", LOCK, "--kind", "lock", "--contend-json", str(summary),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(summary.read_text())
    assert result["ok"] and result["strategy"] == LOCK and result["workers"] == 2
    for name in ("counter", "transfer"):
        workload = result["workloads"][name]
        assert workload["ok"], workload["verdict"]
        assert workload["contend"]["commits"] > 0  # it ran; how fast is a benchmark's question
        assert workload["contend"]["lock_wait_mean_ms"] is not None
    assert ns.count() == 0


@pytest.mark.slow
def test_a_users_lock_that_lets_two_holders_in_breaks_the_counter(contend_target, ns, tmp_path):
    """two_holder_lock lets callers in two at a time by construction (no race to wait for): each
    GET and SET under it overlaps a partner's, and most pairs lose an increment (511 lost of 1194
    commits in 3 s here), so a run of hundreds of pairs breaks the counter whatever the load."""
    summary = tmp_path / "summary.json"
    done = locust(
        *headless("counter.py", users=4, seconds=2),
        "--redis-url", contend_target.url, "--namespace", ns.prefix,
        "--impl", MUTANT_LOCK, "--kind", "lock", "--contend-json", str(summary),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert "INVARIANT BROKEN" in done.stderr and "lost updates" in done.stderr
    assert f"counter/{MUTANT_LOCK}" in done.stderr
    assert not json.loads(summary.read_text())["ok"]
    assert ns.count() == 0


@pytest.mark.slow
@pytest.mark.parametrize(("spec", "code"), [(REGISTRY, 0), (RACY_REGISTRY, 1)])
def test_a_users_registry_is_judged_by_the_registry_invariant(contend_target, ns, tmp_path, spec, code):
    summary = tmp_path / "summary.json"
    done = locust(
        *headless("registry.py", users=4, seconds=1),
        "--redis-url", contend_target.url, "--namespace", ns.prefix,
        "--impl", spec, "--kind", "registry", "--contend-json", str(summary),
    )  # fmt: skip
    assert done.returncode == code, done.stderr[-2000:]
    (workload,) = json.loads(summary.read_text())["workloads"].values()
    assert workload["ok"] is (code == 0), workload["verdict"]
    if code:
        # Two users register one name at once: the loser's INCR leaves an id no name holds.
        assert any("the ids are not gap-free" in line for line in workload["verdict"])
    else:
        assert workload["contend"]["commits"] > 0
    assert ns.count() == 0


@pytest.mark.slow
def test_a_run_that_commits_nothing_fails_with_the_reason(contend_target, ns, tmp_path):
    """Every register() raises: the invariant holds trivially, but 0 commits/s is no result."""
    summary = tmp_path / "summary.json"
    done = locust(
        *headless("registry.py", users=2, seconds=1), "--redis-url", contend_target.url, "--namespace", ns.prefix,
        "--impl", REFUSING_REGISTRY, "--kind", "registry", "--contend-json", str(summary),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr[-2000:]
    assert "RUN FAILED: no operation committed" in done.stderr
    result = json.loads(summary.read_text())
    (workload,) = result["workloads"].values()
    assert not result["ok"] and not workload["ok"] and workload["invariant_ok"]
    assert workload["contend"]["commits"] == 0 and workload["contend"]["failed_share"] == 1.0
    assert any("no operation committed" in line for line in workload["verdict"])
    assert ns.count() == 0


@pytest.mark.slow
def test_a_stop_that_overtakes_the_spawn_still_gets_every_final_tally(contend_target, ns, tmp_path):
    """Workers still busy when the 1 s run time ends (forced: blocked until the master stops)
    handle the master's stop before Locust's spawning greenlet ran. They must stop and report at
    once: before, they started their users anyway, ran until the master gave up 60 s later, and
    the run failed with "no final tally from 2 of 2 load-generating process(es)"."""
    summary = tmp_path / "summary.json"
    started = time.monotonic()
    done = locust(
        "-f", "tests/fixtures/late_spawn_locustfile.py", "--headless", "--processes", "2", *own_master_port(),
        "-u", "2", "-r", "2", "-t", "1s", "--redis-url", contend_target.url, "--namespace", ns.prefix,
        "--strategy", "incr", "--contend-json", str(summary), timeout=55,
        env={"LATE_SPAWN_MARKER": str(tmp_path / "stopping")},
    )  # fmt: skip
    assert "no final tally" not in done.stderr, done.stderr[-2000:]
    result = json.loads(summary.read_text())
    assert len(result["generators"]) == 2  # both workers' final tallies merged
    (workload,) = result["workloads"].values()
    assert workload["invariant_ok"], workload["verdict"]
    # Stopped before any user started: nothing committed, which fails the run (exit 1), for that reason.
    assert workload["contend"]["commits"] == 0 and done.returncode == 1
    assert any("no operation committed" in line for line in workload["verdict"])
    assert time.monotonic() - started < 55
    assert ns.count() == 0


@pytest.mark.slow
def test_a_bad_impl_writes_nothing(contend_target, ns, tmp_path):
    """Refused in Locust's init event: before the server is touched or a user starts."""
    summary = tmp_path / "summary.json"
    done = locust(
        *headless("counter.py", seconds=1), "--redis-url", contend_target.url, "--namespace", ns.prefix,
        "--impl", "tests.fixtures.user_registry:wrong_arity", "--kind", "lock",
        "--contend-json", str(summary), timeout=30,
    )  # fmt: skip
    assert done.returncode == 2
    assert [line for line in done.stderr.splitlines() if line.startswith("contend:")] == [
        "contend: --impl 'tests.fixtures.user_registry:wrong_arity': a lock factory is called as "
        "factory(client: redis.Redis, key: str, ttl_ms: int); wrong_arity() -> 'None' cannot take that "
        "(too many positional arguments): give it those parameters, or choose the --kind it is written for"
    ]
    # No key and no summary. (Locust's own --csv files are opened before any locustfile hook runs.)
    assert ns.count() == 0 and not summary.exists()


# --master and --worker, as across hosts, here on 127.0.0.1 ------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_locust(*args: str, stderr: Any = subprocess.PIPE) -> subprocess.Popen[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("CONTEND_", "LOCUST_"))}
    return subprocess.Popen(
        [sys.executable, "-m", "locust", *args],
        cwd=ROOT,
        env=clean,
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        text=True,
    )


def master_args(port: int, summary: Path, users: int = 4, seconds: int = 2) -> list[str]:
    return [
        *headless("counter.py", users=users, seconds=seconds),
        "--master", "--master-bind-host", "127.0.0.1", "--master-bind-port", str(port),
        "--expect-workers", "2", "--expect-workers-max-wait", "30", "--contend-json", str(summary),
    ]  # fmt: skip


def worker_args(port: int) -> list[str]:
    return ["-f", "loadtests/counter.py", "--worker", "--master-host", "127.0.0.1", "--master-port", str(port)]  # fmt: skip


def own_master_port() -> tuple[str, ...]:
    """--processes forks workers that dial --master-port (default 5557) while the master binds
    --master-bind-port: both on one free port, so two such tests on two xdist workers never meet."""
    port = str(free_port())
    return ("--master-bind-port", port, "--master-port", port)


def stop_all(*processes: subprocess.Popen[str]) -> None:
    for p in processes:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.parametrize("server", ["redis-url", "embedded"])
def test_a_master_checks_once_over_the_tallies_its_two_workers_reported(contend_target, ns, tmp_path, server):
    """The workers' tallies come in their Locust reports; the master checks them once, after both stopped.
    Without --redis-url the master is bound to 127.0.0.1, so its embedded server is allowed."""
    port, summary = free_port(), tmp_path / "summary.json"
    url = ["--redis-url", contend_target.url, "--namespace", ns.prefix] if server == "redis-url" else []
    master = start_locust(*master_args(port, summary), *url)
    workers = [start_locust(*worker_args(port)) for _ in range(2)]
    try:
        _, master_err = master.communicate(timeout=60)
        worker_errs = [w.communicate(timeout=30)[1] for w in workers]
    finally:
        stop_all(master, *workers)
    assert master.returncode == 0, master_err[-2000:]
    assert [w.returncode for w in workers] == [0, 0]
    result = json.loads(summary.read_text())
    workload = result["workloads"]["counter"]
    assert result["ok"] and result["workers"] == 2 and workload["contend"]["processes"] == 2
    commits = [g["commits"]["counter"] for g in result["generators"]]
    # Both reported a tally (on a busy machine one worker's users may start too late to commit).
    assert len(commits) == 2 and sum(commits) > 0 and sum(commits) == workload["contend"]["commits"]
    assert result["redis"].startswith("embedded") is (server == "embedded")
    # Once, on the master, and the counter in Redis matched the sum of both tallies.
    assert master_err.count("contend counter/watch: invariant holds: 1 counter(s) hold") == 1
    assert not any("invariant" in err for err in worker_errs)
    assert ns.count() == 0


@pytest.mark.slow
def test_a_worker_lost_during_the_run_is_named_as_a_missing_tally(contend_target, ns, tmp_path):
    """A worker killed mid-run (its users spawned, the run far from its end) sends no final
    report; the master, stopped with SIGTERM, names the tally missing. The run time is long so
    the kill surely falls inside the run however slowly a busy machine spawns the users."""
    port, summary, log = free_port(), tmp_path / "summary.json", tmp_path / "master.log"
    with log.open("w") as sink:
        master = start_locust(
            *master_args(port, summary, seconds=600),
            "--redis-url", contend_target.url, "--namespace", ns.prefix,
            stderr=sink,
        )  # fmt: skip
    workers = [start_locust(*worker_args(port), stderr=subprocess.DEVNULL) for _ in range(2)]
    try:
        deadline = time.monotonic() + 60
        while "All users spawned" not in log.read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        workers[0].kill()  # SIGKILL: no final report; the master sees its heartbeats stop
        master.send_signal(signal.SIGTERM)
        master.wait(timeout=120)
    finally:
        stop_all(master, *workers)
    assert master.returncode == 1, log.read_text()[-2000:]
    (workload,) = json.loads(summary.read_text())["workloads"].values()
    assert not workload["ok"]
    assert any(
        "no final tally from 1 of 2 load-generating process(es)" in line for line in workload["verdict"]
    )
    assert ns.count() == 0
