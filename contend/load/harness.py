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
  protocols of contend.check.protocols) as the strategy, named by its spec; every process
  (master and workers) imports it, with the current directory importable as for
  `contend check --impl`. Custom options travel to the workers with every spawn message.
* Every operation is one Locust request event (type = workload, name =
  strategy) with its real duration; response times are bucketed to 3
  significant digits down to 1 µs instead of Locust's whole milliseconds.
* Commits, WATCH retries, lock wait and hold times and per-user commit counts
  are tallied per process; at test stop each process writes its tally under
  the run namespace, and the master (or the only process) merges them,
  checks the workload's invariant against what Redis holds, and deletes the
  namespace. A broken invariant makes Locust exit with code 1 (contend.exitcodes: the
  same code as a violation in every contend command).
* Bad options are one line on stderr and exit code 2, before anything is written.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
import sys
import time
from argparse import SUPPRESS
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import gevent
import locust.stats
import redis
from locust import User, constant, events, task
from locust.env import Environment
from locust.runners import STATE_INIT, STATE_STOPPED, MasterRunner, WorkerRunner

from contend.errors import ContendError
from contend.exitcodes import ExitCode
from contend.load import workloads as wl
from contend.load.instrument import counting_client, round_trips
from contend.load.metrics import OperationMetrics, Tally, bucket_ms
from contend.target.binary import find_redis_server
from contend.target.keyspace import Namespace, new_run_id
from contend.target.server import EmbeddedRedis
from contend.target.target import connect_url, mask_url

log = logging.getLogger("contend")

#: Exit code of a run whose invariant broke: a violation, as in every contend command (Locust
#: itself also exits 1 when requests failed, which in these workloads are the code's own errors).
INVARIANT_BROKEN = ExitCode.FAILED
#: How long the checker waits for every worker's tally after the test stops.
TALLY_TIMEOUT = 60.0


# Microsecond resolution --------------------------------------------------------------------
# Locust's documented hook for response-time bucketing (see "Customizing response time
# bucketing"); its CSV writer also truncates percentiles to whole ms, so keep 3 decimals there.
locust.stats.bucket_response_time = bucket_ms  # type: ignore[assignment]


def _precise_percentile_fields(self: Any, stats_entry: Any, use_current: bool = False) -> list[Any]:
    if not stats_entry.num_requests:
        return list(self.percentiles_na)
    if use_current and stats_entry.use_response_times_cache:
        get = stats_entry.get_current_response_time_percentile
    else:
        get = stats_entry.get_response_time_percentile
    return [round(get(p) or 0, 3) for p in self.percentiles_to_report]


if hasattr(locust.stats.StatsCSV, "_percentile_fields"):
    locust.stats.StatsCSV._percentile_fields = _precise_percentile_fields  # type: ignore[method-assign]


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
        "redis-server started at test start and stopped when Locust quits. Keys stay under "
        "--namespace, which is deleted afterwards; FLUSHDB/FLUSHALL are never sent.",
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
        help="the protocol --impl follows: lock or registry (default registry, as contend check)",
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
    impl: wl.UserImpl | None = None  # --impl: the user's implementation is the strategy

    def prefix(self, workload: str) -> str:
        return f"{self.namespace}:{workload}"

    @property
    def procs_key(self) -> str:
        return f"{self.namespace}:_contend:procs"

    @property
    def tallies_key(self) -> str:
        return f"{self.namespace}:_contend:tallies"


def _workload_names(environment: Environment | None = None) -> list[str]:
    """Workloads of the selected user classes (all loaded ones before a selection exists)."""
    classes = environment.user_classes if environment is not None else ContendUser.loaded
    return sorted({c.workload for c in classes if isinstance(c, type) and issubclass(c, ContendUser)})


def _whole(value: Any, option: str, hint: str) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise wl.LoadInputError(f"{option} must be a whole number > 0, got {value!r}{hint}") from None
    return wl.check_positive(number, option, hint)


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
        strategy = impl.spec
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
    hot_keys = _whole(options.hot_keys, "--hot-keys", " (1 is maximal contention)")
    ttl_ms = _whole(options.ttl_ms, "--ttl-ms", " (the lease of lock strategies, in ms)")
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
    )


def _user_impl(options: Any, strategy: str, names: list[str]) -> wl.UserImpl | None:
    """--impl and --kind, loaded and checked against the selected workloads (None without --impl)."""
    spec = str(getattr(options, "impl", "") or "").strip()
    kind = str(getattr(options, "kind", "") or "").strip()
    if not spec:
        if kind:
            raise wl.LoadInputError(
                f"--kind {kind} names the protocol of --impl; give --impl MODULE:FACTORY too"
            )
        return None
    if strategy:
        raise wl.LoadInputError(
            f"--impl {spec} and --strategy {strategy}: choose one (--impl runs your implementation as the strategy)"
        )
    impl = wl.user_impl(spec, kind or "registry")
    wrong = [n for n in names if n not in impl.workloads]
    if wrong:
        files = ",".join(f"loadtests/{n}.py" for n in impl.workloads)
        raise wl.LoadInputError(
            f"--impl {spec} is a {impl.kind}: it runs in the {' and '.join(impl.workloads)} workload"
            f"{'s' if len(impl.workloads) > 1 else ''}, not in {', '.join(wrong)}; load only those: "
            f"locust -f {files}"
        )
    return impl


@events.init.add_listener
def _validate(environment: Environment, **_: Any) -> None:
    """Refuse bad options at once: one line on stderr, exit code 2, nothing written."""
    if isinstance(environment.runner, WorkerRunner) or environment.parsed_options is None:
        return
    try:
        settings = resolve(environment)
        if settings.url:
            connect_url(settings.url)
            if settings.namespace:
                _ensure_empty(settings.url, settings.namespace)
    except ContendError as exc:
        sys.stderr.write(f"contend: {exc}\n")
        sys.stderr.flush()
        sys.exit(2)


def _ensure_empty(url: str, namespace: str) -> None:
    client = redis.Redis.from_url(url, socket_connect_timeout=5)
    try:
        Namespace(client, namespace).ensure_empty()
    finally:
        client.close()


# The embedded server -----------------------------------------------------------------------
# The coordinator: the master, or the only process ---------------------------------------------
@dataclass
class Coordinator:
    """Starts the server and sets keys up at test start; merges tallies and checks at test stop."""

    embedded: EmbeddedRedis | None = None
    namespace: str = ""
    settings: Settings | None = None
    checker: Any = None
    results: dict[str, dict[str, Any]] = field(default_factory=dict)
    broken: bool = False
    workers: int = 0
    generator_cpu: float | None = None

    def start(self, environment: Environment) -> None:
        options = parsed_options(environment)
        settings = resolve(environment)
        url = settings.url
        if not url:
            if self.embedded is None:
                self.embedded = EmbeddedRedis(find_redis_server()).start()
                log.info("contend: started %s", self.embedded.describe())
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
        runner = environment.runner
        self.workers = runner.worker_count if isinstance(runner, MasterRunner) else 0
        # Custom options travel to the workers with every spawn message.
        options.contend_url = url
        options.contend_workloads = ",".join(settings.workloads)
        options.namespace = self.namespace
        log.info(
            "contend: %s with %s, --hot-keys %d on %s, keys under %s",
            "+".join(settings.workloads),
            f"--impl {settings.strategy} (a {settings.impl.kind})"
            if settings.impl
            else f"--strategy {settings.strategy}",
            settings.hot_keys,
            mask_url(url),
            self.namespace,
        )

    def stop(self, environment: Environment) -> None:
        if self.settings is None:
            return
        if isinstance(environment.runner, MasterRunner):
            # Workers may still be stopping (a headless master stops before telling them).
            self.checker = gevent.spawn(self.check, environment)
        else:
            self.check(environment)

    def check(self, environment: Environment) -> None:
        settings = self.settings
        assert settings is not None
        client = redis.Redis.from_url(settings.url, socket_connect_timeout=5)
        try:
            merged, problems, self.generator_cpu = _gather(client, settings)
            for name in settings.workloads:
                tally = merged.get(name) or Tally(name, settings.strategy, processes=0)
                verdict = wl.workload(name).check(
                    client, settings.prefix(name), settings.hot_keys, tally, impl=settings.impl
                )
                lines = list(verdict.lines) + problems
                ok = verdict.ok and not problems
                self.results[name] = {"ok": ok, "lines": lines, "tally": tally}
                if ok:
                    log.info("contend %s/%s: invariant holds: %s", name, settings.strategy, lines[0])
                else:
                    self.broken = True
                    for line in lines:
                        log.error("contend %s/%s: INVARIANT BROKEN: %s", name, settings.strategy, line)
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
            if self.checker is not None:
                self.checker.join(timeout=TALLY_TIMEOUT + 30)
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


def _gather(client: redis.Redis, settings: Settings) -> tuple[dict[str, Tally], list[str], float | None]:
    """Wait for every process's tally, then merge them per workload; also the generators' mean CPU use."""
    deadline = time.monotonic() + TALLY_TIMEOUT
    while True:
        procs = {p.decode() for p in client.smembers(settings.procs_key)}  # type: ignore[union-attr]
        raw = {k.decode(): v for k, v in client.hgetall(settings.tallies_key).items()}  # type: ignore[union-attr]
        missing = procs - raw.keys()
        if procs and not missing:
            break
        if time.monotonic() > deadline:
            break
        gevent.sleep(0.05)
    problems = []
    if not procs:
        problems.append("no load-generating process reported a tally")
    if missing:
        problems.append(f"no tally from {len(missing)} process(es) within {TALLY_TIMEOUT:g} s")
    merged: dict[str, Tally] = {}
    busy: list[float] = []
    for blob in raw.values():
        report = json.loads(blob)
        if report["wall_s"] > 0:
            busy.append(report["cpu_s"] / report["wall_s"])
        for name, data in report["tallies"].items():
            tally = Tally.from_json(data)
            if name in merged:
                merged[name].merge(tally)
            else:
                merged[name] = tally
    return merged, problems, (sum(busy) / len(busy) if busy else None)


def _brief(result: dict[str, Any]) -> str:
    tally: Tally = result["tally"]
    s = tally.summary()
    parts = [f"{tally.commits} commits", f"{tally.failed} failed", f"{tally.unknown} cut short"]
    if s["retries_per_commit"] is not None:
        parts.append(f"{s['retries_per_commit']:.2f} retries/commit")
    if s["lock_wait_mean_ms"] is not None:
        parts.append(
            f"lock wait {s['lock_wait_mean_ms']:.3f} ms, hold {s['lock_hold_mean_ms']:.3f} ms (means)"
        )
    if s["jain_index"] is not None:
        parts.append(f"Jain {s['jain_index']:.3f} over {s['users']} users")
    verdict = "invariant holds" if result["ok"] else "INVARIANT BROKEN"
    return f"{verdict}; " + ", ".join(parts)


def _write_summary(path: Path, environment: Environment, coordinator: Coordinator) -> None:
    settings = coordinator.settings
    assert settings is not None
    stats = environment.stats
    workloads = {}
    for name, result in coordinator.results.items():
        entry = stats.get(settings.strategy, name)
        tally: Tally = result["tally"]
        duration = (entry.last_request_timestamp or 0) - (entry.start_time or 0)
        workloads[name] = {
            "ok": result["ok"],
            "verdict": result["lines"],
            "locust": {
                "requests": entry.num_requests,
                "failures": entry.num_failures,
                "duration_s": duration,
                "requests_per_s": entry.total_rps,
                "avg_ms": entry.avg_response_time,
                "min_ms": entry.min_response_time,
                "max_ms": entry.max_response_time,
                "p50_ms": entry.get_response_time_percentile(0.5),
                "p90_ms": entry.get_response_time_percentile(0.9),
                "p99_ms": entry.get_response_time_percentile(0.99),
            },
            "contend": tally.summary(),
        }
    summary = {
        "strategy": settings.strategy,
        "hot_keys": settings.hot_keys,
        "ttl_ms": settings.ttl_ms,
        "users": getattr(environment.parsed_options, "num_users", None),
        "workers": coordinator.workers,
        "namespace": settings.namespace,
        "redis": mask_url(settings.url) if coordinator.embedded is None else coordinator.embedded.describe(),
        "ok": not coordinator.broken,
        # CPU time / wall time of each load-generating process, averaged: near 1, the client limits the rate.
        "generator_cpu": coordinator.generator_cpu,
        "workloads": workloads,
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=2) + "\n")


COORDINATOR = Coordinator()


# Each load-generating process: the workers, or the only process -------------------------------
@dataclass
class Process:
    """The tallies of this process's users, written under the namespace at test stop."""

    settings: Settings | None = None
    proc_id: str = ""
    tallies: dict[str, Tally] = field(default_factory=dict)
    shared: dict[str, Any] = field(default_factory=dict)  # what this run's users share (workloads')
    users: int = 0
    runs: int = 0
    cpu_started: float = 0.0
    wall_started: float = 0.0

    def start(self, environment: Environment) -> None:
        options = parsed_options(environment)
        # The master's choices: workers may have loaded more user classes than the run uses.
        workloads = tuple(n for n in str(getattr(options, "contend_workloads", "")).split(",") if n)
        self.settings = dataclasses.replace(
            resolve(environment, workloads),
            url=str(options.contend_url),
            namespace=str(options.namespace),
        )
        self.runs += 1
        self.proc_id = f"{socket.gethostname()}:{os.getpid()}:{self.runs}"
        self.tallies = {n: Tally(n, self.settings.strategy) for n in self.settings.workloads}
        self.shared = {}
        self.cpu_started, self.wall_started = time.process_time(), time.monotonic()
        client = redis.Redis.from_url(self.settings.url, socket_connect_timeout=5)
        try:
            client.sadd(self.settings.procs_key, self.proc_id)
        finally:
            client.close()

    def user_id(self) -> str:
        self.users += 1
        return f"{os.getpid()}.{self.users}"

    def stop(self) -> None:
        if self.settings is None:
            return
        blob = json.dumps(
            {
                "tallies": {n: t.to_json() for n, t in self.tallies.items()},
                "cpu_s": time.process_time() - self.cpu_started,
                "wall_s": time.monotonic() - self.wall_started,
            }
        )
        client = redis.Redis.from_url(self.settings.url, socket_connect_timeout=5)
        try:
            client.hset(self.settings.tallies_key, self.proc_id, blob)
        finally:
            client.close()
        self.settings = None


PROCESS = Process()


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
    if not isinstance(environment.runner, MasterRunner):
        PROCESS.stop()
    if not isinstance(environment.runner, WorkerRunner):
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
            self.tally.record(self.user_id, step, unknown=True)
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
