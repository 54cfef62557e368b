"""What the contend locustfiles share: options, the Redis server, tallies and the end-of-run check.

Each locustfile defines one `ContendUser` subclass naming a workload of
`contend.load.workloads`; `locust -f loadtests/` loads them all. (Locust skips
files whose names start with "_", so this one is not a locustfile itself.)

* Options (events.init_command_line_parser): --redis-url (or CONTEND_REDIS_URL;
  default: an embedded redis-server started at test start and stopped when
  Locust quits), --strategy, --hot-keys, --ttl-ms, --namespace (the old --key-namespace
  is accepted with a warning), and
  --contend-json FILE for a machine-readable summary.
* --impl package.module:factory --kind lock|registry runs a user's implementation (the
  protocols of contend.subject.protocols) as the strategy, named by its spec; every process
  (master and workers) imports it, with the current directory importable as for
  `contend check --impl`. Custom options travel to the workers with every spawn message.
* Every operation is one Locust request event (type = workload, name =
  strategy) with its real duration; response times are bucketed to 3
  significant digits down to 1 µs instead of Locust's whole milliseconds.
* Commits, WATCH retries, lock wait and hold times and per-user commit counts
  are tallied per process. A worker's tally rides in Locust's own stats reports
  (events.report_to_master / worker_report, contend.load.tallies); at test stop
  the master asks every worker to stop and waits for its final report, then
  merges the tallies once, checks the workload's invariant against what Redis
  holds, and deletes the namespace (the only process of a plain run checks its
  own). A broken invariant, or a worker whose final tally never came, makes
  Locust exit with code 1 (contend.exitcodes: the same code as a violation in
  every contend command).
* No run passes on nothing: a workload in which no operation committed, or in
  which more than --max-failed-share (default 0.5) of the finished operations
  failed or raised, fails the run too (exit 1, the reason logged and in
  --contend-json). Operations cut short by the end of the run are not failures.
* --master/--worker across hosts: the workers get the master's options with the
  spawn message; a --master that remote workers may join needs --redis-url
  (the embedded server listens on 127.0.0.1 only).
* Bad options are one line on stderr and exit code 2, before anything is written.
"""

from __future__ import annotations

import dataclasses
import functools
import ipaddress
import logging
import os
import socket
import sys
import time
from argparse import SUPPRESS
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import gevent
import locust.stats
import redis
from locust import User, constant, events, task
from locust.env import Environment
from locust.runners import STATE_INIT, STATE_MISSING, STATE_STOPPED, MasterRunner, WorkerRunner

from contend.errors import ContendError
from contend.exitcodes import ExitCode
from contend.load import precise_csv
from contend.load import workloads as wl
from contend.load.instrument import counting_client, round_trips
from contend.load.metrics import MAX_FAILED_SHARE, OperationMetrics, Tally, bucket_ms
from contend.load.summary import LocustFigures, RunSummary, WorkloadSummary
from contend.load.tallies import REPORT_KEY, Collector, Merged, Snapshot
from contend.servers.deployment import Deployment
from contend.servers.keyspace import Namespace, new_run_id
from contend.servers.target import connect_url
from contend.servers.urls import mask_url
from contend.subject.resolve import load
from contend.subject.spec import SubjectSpec, parse_spec
from contend.subject.subject import Subject
from contend.values import share_of_one

log = logging.getLogger("contend")

#: Exit code of a run whose invariant broke: a violation, as in every contend command (Locust
#: itself also exits 1 when requests failed, which in these workloads are the code's own errors).
INVARIANT_BROKEN = ExitCode.FAILED
#: How long the checker waits for every worker's final tally after the test stops.
TALLY_TIMEOUT = 60.0
#: The custom message with which the master asks a worker to stop its users and report.
STOP_MESSAGE = "contend_stop"


# Microsecond resolution --------------------------------------------------------------------
# Locust's documented hook for response-time bucketing (see "Customizing response time
# bucketing"); its CSV writer also truncates percentiles to whole ms, which precise_csv mends
# when a run starts (_on_init).
locust.stats.bucket_response_time = bucket_ms  # type: ignore[assignment]


# Options -----------------------------------------------------------------------------------
@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    strategies = {name: list(w.strategies()) for name, w in wl.WORKLOADS.items() if name in _workload_names()}
    listed = "; ".join(f"{name}: {', '.join(s)}" for name, s in strategies.items())
    parser.add_argument(
        "--redis-url",
        default="",
        env_var="CONTEND_REDIS_URL",
        help="Redis to load (redis://[user:password@]host:port/db); default: an embedded "
        "redis-server on 127.0.0.1, started at test start and stopped when Locust quits (for one "
        "process, --processes N, or a --master bound to 127.0.0.1; a --master that workers on other "
        "hosts may join needs --redis-url). Keys stay under --namespace, which is deleted "
        "afterwards; FLUSHDB/FLUSHALL are never sent.",
    )
    parser.add_argument(
        "--strategy",
        default="",
        env_var="CONTEND_STRATEGY",
        help=f"how each operation protects its read-modify-write ({listed}); default watch",
    )
    parser.add_argument(
        "--impl",
        default="",
        metavar="MODULE:FACTORY",
        env_var="CONTEND_IMPL",
        help="your own implementation instead of a --strategy (importable from the current directory "
        "or PYTHONPATH): a lock protects the counter and transfer workloads, a registry takes the "
        "registry workload's registrations",
    )
    parser.add_argument(
        "--kind",
        default="",
        env_var="CONTEND_KIND",
        help="the protocol --impl follows, needed with --impl: lock or registry",
    )
    parser.add_argument(
        "--hot-keys",
        type=int,
        default=1,
        env_var="CONTEND_HOT_KEYS",
        help="how many distinct keys the users fight over; 1 is maximal contention (default 1)",
    )
    parser.add_argument(
        "--ttl-ms",
        type=int,
        default=10_000,
        env_var="CONTEND_TTL_MS",
        help="lease of the locks taken by lock strategies, in ms (default 10000)",
    )
    parser.add_argument(
        "--max-failed-share",
        default=MAX_FAILED_SHARE,
        env_var="CONTEND_MAX_FAILED_SHARE",
        help="fail the run (exit 1) when more than this share of its operations failed or raised "
        f"(default {MAX_FAILED_SHARE:g}); a run in which nothing committed fails whatever the share",
    )
    parser.add_argument(
        "--namespace",
        default="",
        env_var="CONTEND_NAMESPACE",
        help="prefix of every key written (default: a fresh contend:<id>); refused if it holds keys",
    )
    # The old spelling, accepted with a warning until the next release.
    parser.add_argument("--key-namespace", default="", env_var="CONTEND_KEY_NAMESPACE", help=SUPPRESS)
    parser.add_argument(
        "--contend-json",
        default="",
        include_in_web_ui=False,
        help="write the run's contend summary (tallies, verdicts, latency) to this JSON file",
    )


@dataclass(frozen=True)
class Settings:
    """The validated options of one run."""

    url: str
    namespace: str
    strategy: str
    hot_keys: int
    ttl_ms: int
    workloads: tuple[str, ...]
    impl: Subject | None = None  # --impl: the user's implementation is the strategy
    max_failed_share: float = MAX_FAILED_SHARE

    def prefix(self, workload: str) -> str:
        return f"{self.namespace}:{workload}"


def _workload_names(environment: Environment | None = None) -> list[str]:
    """Workloads of the selected user classes (all loaded ones before a selection exists)."""
    classes = environment.user_classes if environment is not None else ContendUser.loaded
    return sorted({c.workload for c in classes if isinstance(c, type) and issubclass(c, ContendUser)})


def parsed_options(environment: Environment) -> Any:
    """Locust's parsed command line (the harness only runs where Locust parsed one)."""
    if environment.parsed_options is None:
        raise wl.LoadInputError("Locust started without parsed options; run it as `locust -f loadtests/`")
    return environment.parsed_options


def resolve(environment: Environment, workloads: tuple[str, ...] = ()) -> Settings:
    """Validate the options against the selected workloads; LoadInputError says what to change."""
    options = parsed_options(environment)
    names = list(workloads) or _workload_names(environment)
    if not names:
        raise wl.LoadInputError("no contend workload selected; run `locust -f loadtests/`")
    strategy = str(options.strategy or "").strip()
    impl = _user_impl(options, strategy, names)
    if impl is not None:
        strategy = impl.name
    strategy = strategy or "watch"
    missing = [] if impl is not None else [n for n in names if strategy not in wl.workload(n).strategies()]
    if missing:
        known = "; ".join(f"{n}: {', '.join(wl.workload(n).strategies())}" for n in names)
        common = set.intersection(*(set(wl.workload(n).strategies()) for n in names))
        hint = f"; every selected workload has: {', '.join(sorted(common))}" if len(names) > 1 else ""
        if len(names) > 1:
            hint += "; or load one workload: locust -f loadtests/<workload>.py"
        raise wl.LoadInputError(
            f"--strategy {strategy!r} is unknown to the {', '.join(missing)} workload ({known}){hint}"
        )
    hot_keys = wl.check_positive(options.hot_keys, "--hot-keys", " (1 is maximal contention)")
    ttl_ms = wl.check_positive(options.ttl_ms, "--ttl-ms", " (the lease of lock strategies, in ms)")
    max_failed = share_of_one(
        getattr(options, "max_failed_share", MAX_FAILED_SHARE), "--max-failed-share", error=wl.LoadInputError
    )
    given: str = options.namespace
    old: str = getattr(options, "key_namespace", None) or ""
    if not given and old:
        log.warning(
            "contend: --key-namespace is deprecated, use --namespace (accepted until the next release)"
        )
        given = old
    namespace = str(given or "").strip()
    if given and not namespace:
        raise wl.LoadInputError("--namespace must not be blank; leave it out for a fresh contend:<id>")
    return Settings(
        str(options.redis_url or "").strip(),
        namespace,
        strategy,
        hot_keys,
        ttl_ms,
        tuple(names),
        impl,
        float(max_failed),
    )


def _user_impl(options: Any, strategy: str, names: list[str]) -> Subject | None:
    """--impl and --kind through the one door (contend.subject.resolve), checked against the
    selected workloads (None without --impl)."""
    spec = str(getattr(options, "impl", "") or "").strip()
    kind = str(getattr(options, "kind", "") or "").strip()
    parsed = parse_spec(spec, kind, wl.LOAD_SCOPE)
    if parsed is None:
        return None
    if strategy:
        raise wl.LoadInputError(
            f"--impl {spec} and --strategy {strategy}: choose one (--impl runs your implementation as the strategy)"
        )
    impl = _loaded(parsed)
    runs = wl.user_workloads(impl)
    wrong = [n for n in names if n not in runs]
    if wrong:
        files = ",".join(f"loadtests/{n}.py" for n in runs)
        raise wl.LoadInputError(
            f"--impl {spec} is a {impl.family}: it runs in the {' and '.join(runs)} workload"
            f"{'s' if len(runs) > 1 else ''}, not in {', '.join(wrong)}; load only those: "
            f"locust -f {files}"
        )
    return impl


@functools.cache
def _loaded(spec: SubjectSpec) -> Subject:
    """The user's code through the one door, once per process (the options are resolved at
    start-up and again at every test start)."""
    return load(spec)


@events.init.add_listener
def _validate(environment: Environment, **_: Any) -> None:
    """Refuse bad options at once: one line on stderr, exit code 2, nothing written."""
    if isinstance(environment.runner, WorkerRunner) or environment.parsed_options is None:
        return
    try:
        settings = resolve(environment)
        remote = _workers_may_be_remote(environment.parsed_options)
        if settings.url and remote and _is_loopback(urlsplit(settings.url).hostname or ""):
            log.warning(
                "contend: --redis-url %s names this host's loopback: workers on other hosts would load "
                "their own; give an address they all reach",
                mask_url(settings.url),
            )
        if not settings.url and remote:
            raise wl.LoadInputError(
                "--master without --redis-url: the embedded redis-server would listen on 127.0.0.1 of "
                "this host, out of reach of workers on other hosts; give --redis-url "
                "redis://HOST:6379/0 of a server every worker reaches (workers on this machine only: "
                "--master-bind-host 127.0.0.1, or --processes N instead of --master)"
            )
        if settings.url:
            connect_url(settings.url)
            if settings.namespace:
                _ensure_empty(settings.url, settings.namespace)
    except ContendError as exc:
        sys.stderr.write(f"contend: {exc}\n")
        sys.stderr.flush()
        sys.exit(2)


def _workers_may_be_remote(options: Any) -> bool:
    """An explicit --master (not --processes) that workers on other hosts can connect to."""
    if not getattr(options, "master", False) or getattr(options, "processes", None):
        return False
    return not _is_loopback(str(getattr(options, "master_bind_host", "*") or "*"))


def _is_loopback(host: str) -> bool:
    """127.0.0.1, ::1, localhost; not "*" nor another name."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _ensure_empty(url: str, namespace: str) -> None:
    client = redis.Redis.from_url(url, socket_connect_timeout=5)
    try:
        Namespace(client, namespace).ensure_empty()
    finally:
        client.close()


# The coordinator: the master, or the only process ---------------------------------------------
@dataclass
class Coordinator:
    """Starts the server and sets keys up at test start; merges tallies and checks at test stop."""

    #: The embedded server this process started (None: --redis-url, or not started yet).
    embedded: Deployment | None = None
    namespace: str = ""
    settings: Settings | None = None
    collector: Collector = field(default_factory=Collector)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    broken: bool = False
    workers: int = 0
    merged: Merged | None = None

    def start(self, environment: Environment) -> None:
        options = parsed_options(environment)
        settings = resolve(environment)
        url = settings.url
        if not url:
            if self.embedded is None:
                self.embedded = Deployment(keep_clock=False)  # Locust users run in real time
                try:
                    self.embedded.start()
                except BaseException:
                    self.embedded.stop()
                    self.embedded = None
                    raise
                log.info("contend: started %s", self.embedded.description)
            url = self.embedded.url
        if not self.namespace:
            self.namespace = settings.namespace or f"contend:{new_run_id()}"
        settings = dataclasses.replace(settings, url=url, namespace=self.namespace)
        client = redis.Redis.from_url(url, socket_connect_timeout=5)
        try:
            Namespace(client, self.namespace).ensure_empty()
            for name in settings.workloads:
                wl.workload(name).setup(client, settings.prefix(name), settings.hot_keys)
        finally:
            client.close()
        self.settings = settings
        self.results = {}
        self.merged = None
        runner = environment.runner
        workers = _active_workers(runner) if isinstance(runner, MasterRunner) else set()
        self.workers = len(workers)
        run = new_run_id()
        self.collector.begin(run, workers)
        # Custom options travel to the workers with every spawn message.
        options.contend_run = run
        options.contend_url = url
        options.contend_workloads = ",".join(settings.workloads)
        options.namespace = self.namespace
        log.info(
            "contend: %s with %s, --hot-keys %d on %s, keys under %s",
            "+".join(settings.workloads),
            f"--impl {settings.strategy} (a {settings.impl.family})"
            if settings.impl
            else f"--strategy {settings.strategy}",
            settings.hot_keys,
            mask_url(url),
            self.namespace,
        )

    def stop(self, environment: Environment) -> None:
        if self.settings is None or self.merged is not None:
            return
        runner = environment.runner
        if isinstance(runner, MasterRunner):
            self.await_workers(runner)
        else:
            snapshot = PROCESS.snapshot()
            self.collector.begin(self.collector.run, [PROCESS.proc_id])
            self.collector.receive(PROCESS.proc_id, snapshot.to_json() if snapshot else None)
        self.check(environment)

    def await_workers(self, runner: MasterRunner) -> None:
        """Have every worker of the run stop, and wait for its final report (TALLY_TIMEOUT at most).

        A headless master fires test_stop before it tells the workers anything (it sends them
        "quit" afterwards and stops listening half a second later), so the master asks them to
        stop here, while it still receives their reports. A worker already stopped answers with
        its final report again; one that is gone counts as missing.
        """
        started = time.monotonic()
        asked: set[str] = set()
        while time.monotonic() - started < TALLY_TIMEOUT:
            connected = [c.id for c in runner.clients.all if c.state != STATE_MISSING]
            pending = self.collector.pending(connected)
            if not pending:
                break
            for worker in sorted(pending - asked):
                runner.send_message(STOP_MESSAGE, {"run": self.collector.run}, client_id=worker)
            asked |= pending
            gevent.sleep(0.05)

    def check(self, environment: Environment) -> None:
        settings = self.settings
        assert settings is not None
        merged = self.collector.merged(settings.workloads, settings.strategy, TALLY_TIMEOUT)
        self.merged = merged
        problems = merged.problems
        client = redis.Redis.from_url(settings.url, socket_connect_timeout=5)
        try:
            for name in settings.workloads:
                tally = merged.tallies.get(name) or Tally(name, settings.strategy, processes=0)
                verdict = wl.workload(name).check(
                    client, settings.prefix(name), settings.hot_keys, tally, impl=settings.impl
                )
                lines = list(verdict.lines) + problems
                invariant_ok = verdict.ok and not problems
                # No run passes on nothing: a point that committed nothing, or mostly failed.
                stalled = tally.progress_problems(settings.max_failed_share)
                ok = invariant_ok and not stalled
                self.results[name] = {
                    "ok": ok,
                    "invariant_ok": invariant_ok,
                    # The reason first: the run failed (stalled) though its invariant held, or broke it.
                    "lines": lines + stalled if not invariant_ok else stalled + lines,
                    "tally": tally,
                }
                if invariant_ok:
                    log.info("contend %s/%s: invariant holds: %s", name, settings.strategy, lines[0])
                else:
                    for line in lines:
                        log.error("contend %s/%s: INVARIANT BROKEN: %s", name, settings.strategy, line)
                for line in stalled:
                    log.error("contend %s/%s: RUN FAILED: %s", name, settings.strategy, line)
                if not ok:
                    self.broken = True
            if self.broken:
                environment.process_exit_code = INVARIANT_BROKEN
            Namespace(client, settings.namespace).cleanup()
        except Exception as exc:
            self.broken = True
            environment.process_exit_code = INVARIANT_BROKEN
            log.exception("contend: the end-of-run check failed: %s", exc)
        finally:
            client.close()

    def quit(self, environment: Environment) -> None:
        runner = environment.runner
        if runner is not None and runner.state not in (STATE_INIT, STATE_STOPPED):
            # Ctrl-C during a run: Locust fires `quitting` before it stops the test.
            runner.stop()
        try:
            if self.broken:
                environment.process_exit_code = INVARIANT_BROKEN
            path = getattr(environment.parsed_options, "contend_json", "")
            if path and self.settings is not None:
                _write_summary(Path(path), environment, self)
            for name, result in self.results.items():
                log.info(
                    "contend %s/%s: %s",
                    name,
                    self.settings.strategy if self.settings else "?",
                    _brief(result),
                )
        finally:
            if self.settings is not None and self.embedded is None:
                _cleanup(self.settings)  # normally done by the check already; never harms
            if self.embedded is not None:
                self.embedded.stop()
                self.embedded = None


def _cleanup(settings: Settings) -> None:
    """Delete the run namespace, if the server still answers."""
    client = redis.Redis.from_url(settings.url, socket_connect_timeout=2)
    try:
        Namespace(client, settings.namespace).cleanup()
    except redis.RedisError as exc:
        log.warning("contend: could not delete %s: %s", settings.namespace, exc)
    finally:
        client.close()


def _brief(result: dict[str, Any]) -> str:
    tally: Tally = result["tally"]
    s = tally.summary()
    parts = [
        f"{tally.commits} commits",
        f"{tally.failed} failed",
        f"{tally.unknown - tally.cut_short} raised",
        f"{tally.cut_short} cut short",
    ]
    if s["retries_per_commit"] is not None:
        parts.append(f"{s['retries_per_commit']:.2f} retries/commit")
    if s["lock_wait_mean_ms"] is not None:
        parts.append(
            f"lock wait {s['lock_wait_mean_ms']:.3f} ms, hold {s['lock_hold_mean_ms']:.3f} ms (means)"
        )
    if s["jain_index"] is not None:
        parts.append(f"Jain {s['jain_index']:.3f} over {s['users']} users")
    verdict = "invariant holds" if result.get("invariant_ok", result["ok"]) else "INVARIANT BROKEN"
    if result.get("invariant_ok") and not result["ok"]:
        verdict += " but the run FAILED (nothing committed, or too many failures)"
    return f"{verdict}; " + ", ".join(parts)


def _write_summary(path: Path, environment: Environment, coordinator: Coordinator) -> None:
    settings = coordinator.settings
    assert settings is not None
    merged = coordinator.merged
    stats = environment.stats
    workloads = {}
    for name, result in coordinator.results.items():
        entry = stats.get(settings.strategy, name)
        tally: Tally = result["tally"]
        duration = (entry.last_request_timestamp or 0) - (entry.start_time or 0)
        workloads[name] = WorkloadSummary(
            ok=result["ok"],
            invariant_ok=result["invariant_ok"],
            verdict=tuple(result["lines"]),
            locust=LocustFigures(
                requests=entry.num_requests,
                failures=entry.num_failures,
                duration_s=duration,
                start_time=entry.start_time,
                last_request_time=entry.last_request_timestamp,
                requests_per_s=entry.total_rps,
                avg_ms=entry.avg_response_time,
                min_ms=entry.min_response_time,
                max_ms=entry.max_response_time,
                p50_ms=entry.get_response_time_percentile(0.5),
                p90_ms=entry.get_response_time_percentile(0.9),
                p99_ms=entry.get_response_time_percentile(0.99),
            ),
            contend=tally.summary(),
        )
    RunSummary(
        strategy=settings.strategy,
        hot_keys=settings.hot_keys,
        ttl_ms=settings.ttl_ms,
        max_failed_share=settings.max_failed_share,
        users=getattr(environment.parsed_options, "num_users", None),
        workers=coordinator.workers,
        namespace=settings.namespace,
        redis=mask_url(settings.url)
        if coordinator.embedded is None
        else coordinator.embedded.primary_description,
        ok=not coordinator.broken,
        generator_cpu=merged.generator_cpu if merged else None,
        generators=merged.generators if merged else [],
        workloads=workloads,
    ).write(path)


COORDINATOR = Coordinator()


# Each load-generating process: the workers, or the only process -------------------------------
@dataclass
class Process:
    """The tallies of this process's users; a snapshot of them goes with every report to the master."""

    settings: Settings | None = None
    run: str = ""
    proc_id: str = ""
    tallies: dict[str, Tally] = field(default_factory=dict)
    shared: dict[str, Any] = field(default_factory=dict)  # what this run's users share (workloads')
    users: int = 0
    runs: int = 0
    cpu_started: float = 0.0
    wall_started: float = 0.0
    stopped: tuple[float, float] | None = None  # (cpu, wall) seconds at test stop

    def start(self, environment: Environment) -> None:
        options = parsed_options(environment)
        # The master's choices: workers may have loaded more user classes than the run uses.
        workloads = tuple(n for n in str(getattr(options, "contend_workloads", "")).split(",") if n)
        self.settings = dataclasses.replace(
            resolve(environment, workloads),
            url=str(options.contend_url),
            namespace=str(options.namespace),
        )
        self.run = str(options.contend_run)
        self.runs += 1
        self.proc_id = f"{socket.gethostname()}:{os.getpid()}:{self.runs}"
        self.tallies = {n: Tally(n, self.settings.strategy) for n in self.settings.workloads}
        self.shared = {}
        self.stopped = None
        self.cpu_started, self.wall_started = time.process_time(), time.monotonic()

    def user_id(self) -> str:
        self.users += 1
        return f"{os.getpid()}.{self.users}"

    def stop(self) -> None:
        if self.settings is not None and self.stopped is None:
            self.stopped = (time.process_time() - self.cpu_started, time.monotonic() - self.wall_started)

    def snapshot(self) -> Snapshot | None:
        """The tallies so far (final once the users stopped); None before the first run."""
        if not self.run:
            return None
        cpu, wall = self.stopped or (
            time.process_time() - self.cpu_started,
            time.monotonic() - self.wall_started,
        )
        return Snapshot(self.run, self.stopped is not None, self.tallies, cpu, wall)


PROCESS = Process()


def _active_workers(runner: MasterRunner) -> set[str]:
    """The workers a run starts on: those Locust dispatches users to."""
    return {c.id for c in runner.clients.ready + runner.clients.spawning + runner.clients.running}


def _send_report(runner: WorkerRunner) -> None:
    """A stats report to the master now, as Locust's own periodic one (tally snapshot included)."""
    data: dict[str, Any] = {}
    runner.environment.events.report_to_master.fire(client_id=runner.client_id, data=data)
    runner.send_message("stats", data)


def _on_stop_request(environment: Environment, msg: Any, **_: Any) -> None:
    """A worker asked by the master to stop its users and send its final tally.

    The run is this worker's once its spawn message fired test_start (PROCESS.stopped is None),
    whatever Locust's state says: a master whose run time ends while the worker is still busy
    sends the stop right behind the spawn, so the worker handles it before its spawning
    greenlet has run (Locust's state is still "ready", or "stopped" from the run before). Such
    a worker must stop too, or the spawning greenlet starts users that run until "quit".
    """
    runner = environment.runner
    assert isinstance(runner, WorkerRunner)
    run = msg.data.get("run") if isinstance(msg.data, dict) else None
    if PROCESS.stopped is None and PROCESS.settings is not None and run in (None, PROCESS.run):
        spawning = runner.spawning_greenlet
        if spawning is not None and not spawning.ready():
            spawning.kill(block=True)  # before it starts users (Locust's stop does this from "ready" on)
        if runner.state == STATE_STOPPED:
            PROCESS.stop()  # runner.stop() would return at once: no test_stop, no final report
            _send_report(runner)
        else:
            runner.stop()  # fires test_stop, which sends the final report
    else:
        _send_report(runner)  # stopped already (or not this run yet): the final report again


@events.init.add_listener
def _on_init(environment: Environment, **_: Any) -> None:
    # Locust starts the --run-time timer right after this event, from the gevent loop's cached
    # clock, which stood still through the start-up (imports, this module's checks): on a busy
    # machine it was seconds old, and a 2 s run ended at once with no request made.
    gevent.get_hub().loop.update_now()
    precise_csv.apply()
    if isinstance(environment.runner, WorkerRunner):
        environment.runner.register_message(STOP_MESSAGE, _on_stop_request)
    # gevent's loop keeps the time of its last iteration, and it has not iterated since the hub
    # was made at import: Locust sets its --run-time timer (gevent.spawn_later) from that stale
    # time, so on a machine slow to import Locust a 2 s run ended 0.1 s after it began, before
    # any user ran (seen here: "Run time limit set to 2 seconds", then "reached" 0.1 s later).
    gevent.get_hub().loop.update_now()


@events.report_to_master.add_listener
def _on_report_to_master(client_id: str, data: dict[str, Any], **_: Any) -> None:
    snapshot = PROCESS.snapshot()
    if snapshot is not None:
        data[REPORT_KEY] = snapshot.to_json()


@events.worker_report.add_listener
def _on_worker_report(client_id: str, data: dict[str, Any], **_: Any) -> None:
    COORDINATOR.collector.receive(client_id, data.get(REPORT_KEY))


@events.test_start.add_listener
def _on_test_start(environment: Environment, **_: Any) -> None:
    runner = environment.runner
    if not isinstance(runner, WorkerRunner):
        try:
            COORDINATOR.start(environment)
        except ContendError as exc:
            log.error("contend: %s", exc)
            environment.process_exit_code = ExitCode.BAD_INPUT
            if runner is not None:
                gevent.spawn(runner.quit)
            return
    if not isinstance(runner, MasterRunner):
        PROCESS.start(environment)


@events.test_stop.add_listener
def _on_test_stop(environment: Environment, **_: Any) -> None:
    runner = environment.runner
    if not isinstance(runner, MasterRunner):
        PROCESS.stop()
    if isinstance(runner, WorkerRunner):
        # The final tally, before Locust's "client_stopped" (one connection keeps the order).
        _send_report(runner)
    else:
        COORDINATOR.stop(environment)


@events.quitting.add_listener
def _on_quitting(environment: Environment, **_: Any) -> None:
    if not isinstance(environment.runner, WorkerRunner):
        COORDINATOR.quit(environment)


# The user ------------------------------------------------------------------------------------
class ContendUser(User):
    """One client: its own connection, one operation after another with no think time."""

    abstract = True
    workload: ClassVar[str] = ""
    loaded: ClassVar[list[type[ContendUser]]] = []
    wait_time = constant(0)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.workload:
            ContendUser.loaded.append(cls)

    def on_start(self) -> None:
        settings = PROCESS.settings
        assert settings is not None, "test_start sets the process up before users start"
        self.user_id = PROCESS.user_id()
        self.strategy = settings.strategy
        self.tally = PROCESS.tallies[self.workload]
        self.tally.user(self.user_id)
        self.redis = counting_client(settings.url)
        self.redis.ping()  # connect before the first timed operation
        self.operation = wl.workload(self.workload).operation(
            self.redis,
            settings.prefix(self.workload),
            settings.strategy,
            settings.hot_keys,
            settings.ttl_ms,
            self.user_id,
            impl=settings.impl,
            shared=PROCESS.shared,
        )

    def on_stop(self) -> None:
        self.redis.close()

    @task
    def operate(self) -> None:
        step = OperationMetrics()
        before = round_trips(self.redis)
        start = time.perf_counter()
        error: Exception | None = None
        failed = unknown = False
        try:
            self.operation(step)
        except wl.NoEffect as exc:
            error, failed = exc, True
        except Exception as exc:  # the outcome is unknown: it may have taken effect
            error, unknown = exc, True
        except BaseException:  # the user is being stopped mid-operation
            step.round_trips = round_trips(self.redis) - before
            self.tally.record(self.user_id, step, cut_short=True)
            raise
        elapsed_ms = (time.perf_counter() - start) * 1000
        step.round_trips = round_trips(self.redis) - before
        self.tally.record(self.user_id, step, failed=failed, unknown=unknown)
        self.environment.events.request.fire(
            request_type=self.workload,
            name=self.strategy,
            response_time=elapsed_ms,
            response_length=0,
            exception=error,
            context={"committed": step.committed, "retries": step.retries},
        )
