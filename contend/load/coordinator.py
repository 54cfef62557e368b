"""The coordinator of a run (the master, or the only process): it starts the embedded server and
sets the keys up at test start; at test stop it gathers every process's final tally, merges
them once, checks the workload's invariant against what Redis holds, deletes the namespace, and
writes the --contend-json summary (contend.load.summary)."""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import gevent
import redis
from locust.env import Environment
from locust.runners import STATE_INIT, STATE_MISSING, STATE_STOPPED, MasterRunner

from contend.exitcodes import ExitCode
from contend.load import workloads as wl
from contend.load.metrics import Tally
from contend.load.process import PROCESS, STOP_MESSAGE
from contend.load.settings import Settings, parsed_options, resolve
from contend.load.summary import LocustFigures, RunSummary, WorkloadSummary
from contend.load.tallies import Collector, Merged
from contend.servers.deployment import Deployment
from contend.servers.keyspace import Namespace, new_run_id
from contend.servers.urls import mask_url

log = logging.getLogger("contend")

#: Exit code of a run whose invariant broke: a violation, as in every contend command (Locust
#: itself also exits 1 when requests failed, which in these workloads are the code's own errors).
INVARIANT_BROKEN = ExitCode.FAILED
#: How long the checker waits for every worker's final tally after the test stops.
TALLY_TIMEOUT = 60.0


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
                tally = merged.tallies.get(name) or Tally(name, settings.strategy_of(name), processes=0)
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
                    log.info("contend %s/%s: invariant holds: %s", name, tally.strategy, lines[0])
                else:
                    for line in lines:
                        log.error("contend %s/%s: INVARIANT BROKEN: %s", name, tally.strategy, line)
                for line in stalled:
                    log.error("contend %s/%s: RUN FAILED: %s", name, tally.strategy, line)
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
                    result["tally"].strategy,
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
    if s["latency_mean_ms"] is not None:
        parts.append(
            f"end-to-end latency {s['latency_p50_ms']:.3f} ms median, {s['latency_p99_ms']:.3f} ms p99"
        )
    if s["redeliveries_per_job"] is not None:
        parts.append(f"{s['redeliveries_per_job']:.4f} redeliveries/job ({s['redeliveries']})")
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
        entry = stats.get(settings.strategy_of(name), name)
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


def _active_workers(runner: MasterRunner) -> set[str]:
    """The workers a run starts on: those Locust dispatches users to."""
    return {c.id for c in runner.clients.ready + runner.clients.spawning + runner.clients.running}
