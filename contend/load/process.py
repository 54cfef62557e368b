"""Each load-generating process of a run (a worker, or the only process): its users' tallies, a
snapshot of which goes with every stats report to the master, and how it answers the master's
request to stop and send its final tally."""

from __future__ import annotations

import dataclasses
import os
import socket
import time
from dataclasses import dataclass, field
from typing import Any

from locust.env import Environment
from locust.runners import STATE_STOPPED, WorkerRunner

from contend.load.metrics import Tally
from contend.load.settings import Settings, parsed_options, resolve
from contend.load.tallies import Snapshot

#: The custom message with which the master asks a worker to stop its users and report.
STOP_MESSAGE = "contend_stop"


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
        self.tallies = {n: Tally(n, self.settings.strategy_of(n)) for n in self.settings.workloads}
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


def send_report(runner: WorkerRunner) -> None:
    """A stats report to the master now, as Locust's own periodic one (tally snapshot included)."""
    data: dict[str, Any] = {}
    runner.environment.events.report_to_master.fire(client_id=runner.client_id, data=data)
    runner.send_message("stats", data)


def on_stop_request(environment: Environment, msg: Any, **_: Any) -> None:
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
            send_report(runner)
        else:
            runner.stop()  # fires test_stop, which sends the final report
    else:
        send_report(runner)  # stopped already (or not this run yet): the final report again
