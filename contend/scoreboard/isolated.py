"""Running rows in their libraries' own environments: one worker process per row, a few at once.

Each row's environment is made first if need be (contend.scoreboard.environments); its worker
(`python -m contend.scoreboard.worker`) has it first on its path and runs the row against the
server this process opened, in a namespace of its own. Its events come back as JSON lines and
fill the row's LibraryResult here, so the table, the report and the exit code are the same
as for a row run in this process.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from contend.check.battery import ResultRow
from contend.check.framework import CheckOptions, CheckResult
from contend.scoreboard.confirm import CONFIRM_ATTEMPTS
from contend.scoreboard.environments import Environment, EnvironmentFailed, worker_environ
from contend.scoreboard.library import Library
from contend.scoreboard.run import LibraryResult, Scoreboard, started_here, subject_for
from contend.servers.target import Target
from contend.subject.subject import Subject

#: Rows run at once by default: each worker mostly waits (leases, Redis), but its real-time checks
#: need the machine not to stall them: two at once on two cores.
DEFAULT_JOBS = 2
#: A worker that says nothing for this long is stopped (a library hung outside every check's budget).
SILENT_SECONDS = 600.0


def requirements_of(library: Library, latest: bool) -> tuple[str, ...]:
    """The row's pip requirements: pinned, or with `latest` the newest release of each."""
    if not latest:
        return library.requirements
    return tuple(req.split("==")[0] for req in library.requirements)


def _not_loaded(*args: Any) -> Any:
    raise RuntimeError("this library runs in a worker process of its own")


def check_result(data: dict[str, Any]) -> CheckResult:
    fields = {f.name for f in dataclasses.fields(CheckResult)}
    return CheckResult(**{k: v for k, v in data.items() if k in fields})


class Runner:
    """Rows in worker processes, `jobs` at once; stop() ends the workers still running."""

    def __init__(
        self,
        target: Target,
        options: CheckOptions,
        *,
        root: Path,
        jobs: int = DEFAULT_JOBS,
        latest: bool = False,
        redis_server: str | None = None,
        namespace: str | None = None,
        on_result: Callable[[Subject, CheckResult], None] = lambda s, r: None,
        on_library: Callable[[Library], None] = lambda lib: None,
        on_install: Callable[[Library, Environment], None] = lambda lib, env: None,
        on_done: Callable[[LibraryResult], None] = lambda result: None,
        confirm_attempts: int = CONFIRM_ATTEMPTS,
    ) -> None:
        self.target, self.options, self.root, self.jobs = target, options, root, jobs
        self.confirm_attempts = confirm_attempts
        self.latest, self.redis_server, self.namespace = latest, redis_server, namespace
        self.on_result, self.on_library, self.on_install = on_result, on_library, on_install
        self.on_done = on_done
        self._building: dict[Path, threading.Lock] = {}
        self._guard = threading.Lock()
        self._procs: set[subprocess.Popen[str]] = set()
        self.stopping = threading.Event()

    def environment(self, library: Library) -> Path | None:
        """The row's environment, made if need be (None: redis-py itself, contend's own)."""
        requirements = requirements_of(library, self.latest)
        no_deps = tuple(req.split("==")[0] for req in library.no_deps) if self.latest else library.no_deps
        if not requirements and not no_deps:
            return None
        env = Environment(requirements, self.root, no_deps=no_deps)
        with self._guard:
            lock = self._building.setdefault(env.path, threading.Lock())
        with lock:
            if not env.ready:
                self.on_install(library, env)
            return env.ensure()

    def run(self, library: Library, result: LibraryResult) -> None:
        """One row: its environment, then its worker; `result` filled from the worker's events."""
        started = time.perf_counter()
        if library.not_run:
            result.skipped = library.not_run
            return
        try:
            path = self.environment(library)
        except EnvironmentFailed as exc:
            result.skipped = f"does not install: {exc}"
            return
        if self.stopping.is_set():
            return
        self.on_library(library)
        subject = subject_for(library, _not_loaded)
        result.row = ResultRow(subject)
        request = {
            "rows": [library.key],
            "url": self.target.url,
            "options": dataclasses.asdict(self.options),
            "redis_server": self.redis_server,
            "confirm_attempts": self.confirm_attempts,
            "namespace": f"{self.namespace}:{library.key}" if self.namespace else None,
            # A row over several masters starts its own when contend started the board's server,
            # and so does every row: its own server and virtual clock, whatever runs beside it.
            "own_masters": started_here(self.target),
            "own_server": started_here(self.target),
            # The servers' clock, which the worker's scheduler drives (contend.servers.clock).
            "clock": (
                {"path": str(self.target.clock.path), "epoch": self.target.clock.epoch}
                if self.target.clock is not None
                else None
            ),
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "contend.scoreboard.worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=worker_environ(path),
        )
        with self._guard:
            self._procs.add(proc)
        errors: list[str] = []
        drain = threading.Thread(target=lambda: errors.extend(proc.stderr or ()), daemon=True)
        drain.start()
        try:
            assert proc.stdin is not None and proc.stdout is not None
            proc.stdin.write(json.dumps(request))
            proc.stdin.close()
            for line in proc.stdout:
                self._event(json.loads(line), subject, result)
            proc.wait()
        finally:
            with self._guard:
                self._procs.discard(proc)
            drain.join(5)
            if not result.seconds:
                result.seconds = time.perf_counter() - started
        if proc.returncode not in (0, None) and not result.skipped and not self.stopping.is_set():
            last = "".join(errors).strip().splitlines()[-1:] or ["no output"]
            result.skipped = f"its worker ended with exit code {proc.returncode}: {last[0][:300]}"

    def _event(self, event: dict[str, Any], subject: Subject, result: LibraryResult) -> None:
        assert result.row is not None
        if event["event"] == "result":
            self.on_result(subject, check_result(event["result"]))
        elif event["event"] == "row":
            result.version = event["version"]
            result.skipped = event["skipped"]
            result.seconds = event["seconds"]
            result.fidelity = event["fidelity"]
            result.fidelity_seen = event["fidelity_seen"]
            result.fidelity_error = event["fidelity_error"]
            result.noise = event["noise"]
            result.row.results[:] = [check_result(r) for r in event["results"]]
            if result.skipped or (not result.row.results and result.fidelity_error):
                result.row = None if result.skipped else result.row

    def _run_one(self, library: Library, result: LibraryResult) -> None:
        self.run(library, result)
        if not self.stopping.is_set():
            self.on_done(result)

    def stop(self) -> None:
        """End every worker still running (each stops its servers and cleans its namespace)."""
        self.stopping.set()
        with self._guard:
            procs = list(self._procs)
        for proc in procs:
            with contextlib.suppress(ProcessLookupError):
                proc.terminate()
        for proc in procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()

    def run_all(self, libraries: Sequence[Library], board: Scoreboard, stop: threading.Event | None) -> None:
        """Every row, `jobs` at once, into `board` in scoreboard order."""
        results = [LibraryResult(lib) for lib in libraries]
        board.results.extend(results)
        started = time.perf_counter()
        watcher_done = threading.Event()

        def watch() -> None:
            while not watcher_done.wait(0.2):
                if stop is not None and stop.is_set():
                    self.stop()
                    return

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        try:
            with ThreadPoolExecutor(max_workers=max(1, self.jobs)) as pool:
                futures = [
                    pool.submit(self._run_one, lib, res) for lib, res in zip(libraries, results, strict=True)
                ]
                for future in futures:
                    future.result()
        finally:
            watcher_done.set()
            board.seconds = time.perf_counter() - started
