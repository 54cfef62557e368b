"""What the contend locustfiles share: options, the Redis server, tallies and the end-of-run check.

This module wires them to Locust's events and defines the user (`ContendUser`); the validated
options are contend.load.settings, the coordinator (the master, or the only process) is
contend.load.coordinator, and each load-generating process's tallies are contend.load.process.

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

import ipaddress
import logging
import sys
import time
from argparse import SUPPRESS
from typing import Any, ClassVar
from urllib.parse import urlsplit

import gevent
import locust.stats
import redis
from locust import User, constant, events, task
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from contend.errors import ContendError
from contend.exitcodes import ExitCode
from contend.load import precise_csv
from contend.load import workloads as wl
from contend.load.coordinator import COORDINATOR
from contend.load.instrument import counting_client, round_trips
from contend.load.metrics import MAX_FAILED_SHARE, OperationMetrics, bucket_ms
from contend.load.process import PROCESS, STOP_MESSAGE, on_stop_request, send_report
from contend.load.settings import LOADED, resolve, workload_names
from contend.load.tallies import REPORT_KEY
from contend.load.workload import LoadInputError, NoEffect
from contend.servers.keyspace import Namespace
from contend.servers.target import connect_url
from contend.servers.urls import mask_url

log = logging.getLogger("contend")

# Microsecond resolution --------------------------------------------------------------------
# Locust's documented hook for response-time bucketing (see "Customizing response time
# bucketing"); its CSV writer also truncates percentiles to whole ms, which precise_csv mends
# when a run starts (_on_init).
locust.stats.bucket_response_time = bucket_ms  # type: ignore[assignment]


# Options -----------------------------------------------------------------------------------
@events.init_command_line_parser.add_listener
def _add_options(parser: Any) -> None:
    strategies = {name: list(w.strategies()) for name, w in wl.WORKLOADS.items() if name in workload_names()}
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
        help="the protocol --impl follows, needed with --impl: lock, registry or queue",
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
            raise LoadInputError(
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


@events.init.add_listener
def _on_init(environment: Environment, **_: Any) -> None:
    # Locust starts the --run-time timer right after this event, from the gevent loop's cached
    # clock, which stood still through the start-up (imports, this module's checks): on a busy
    # machine it was seconds old, and a 2 s run ended at once with no request made.
    gevent.get_hub().loop.update_now()
    precise_csv.apply()
    if isinstance(environment.runner, WorkerRunner):
        environment.runner.register_message(STOP_MESSAGE, on_stop_request)
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
        send_report(runner)
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
    wait_time = constant(0)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.workload:
            LOADED.append(cls)

    def on_start(self) -> None:
        settings = PROCESS.settings
        assert settings is not None, "test_start sets the process up before users start"
        self.user_id = PROCESS.user_id()
        self.strategy = settings.strategy_of(self.workload)
        self.tally = PROCESS.tallies[self.workload]
        self.tally.user(self.user_id)
        self.redis = counting_client(settings.url)
        self.redis.ping()  # connect before the first timed operation
        self.operation = wl.workload(self.workload).operation(
            self.redis,
            settings.prefix(self.workload),
            self.strategy,
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
        except NoEffect as exc:
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
