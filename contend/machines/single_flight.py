"""The single-flight machine: clients call one key while Hypothesis interleaves them.

Each call passes a function that records its run and returns a value naming
it; Hypothesis decides whether that function is slow (it sleeps, virtually,
for half the lease while others poll) or raises. Properties:

* runs-once: a computation never starts while another one is running whose
  leader is alive and inside its lease;
* shared-result: a call that returns gives back the value of a computation
  that finished (never None, never something nobody computed);
* leader-failure: when the computation raised, the callers that waited for it
  raise a clear error (or retry and compute anew): they never return nothing.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.impl.catalog import LEADER_FAILURE, RUNS_ONCE, SHARED_RESULT
from contend.machines.base import ScheduledMachine
from contend.target.target import Target

LEASE_MS = 10_000


class ComputationFailed(Exception):
    """What a failing computation raises."""


@dataclass
class Computation:
    client: int
    number: int
    started: float
    finished: float | None = None
    failed: bool = False

    @property
    def value(self) -> str:
        return f"computed by c{self.client} (#{self.number})"


class SingleFlightMachine(ScheduledMachine):
    factory: Any = None
    claims: frozenset[str] = frozenset()
    clients = 3

    def __init__(self, target: Target) -> None:
        self.flights: list[Any] = []
        self.computations: list[Computation] = []
        self.dead: set[int] = set()
        # (property, evidence) found inside a client's computation, reported after the step
        self.violations: list[tuple[str, str]] = []
        super().__init__(target)

    def setup_clients(self) -> None:
        key = self.ns.key("flight")
        kwargs: dict[str, Any] = {}
        if getattr(type(self).factory, "__name__", "") == "factory":
            kwargs["renew"] = False  # the renewing thread is not a scheduled client
        self.flights = [type(self).factory(conn, key, LEASE_MS, **kwargs) for conn in self.connections]

    @precondition(lambda self: bool(self.idle_clients()))
    @rule(client=st.integers(0, 3), slow=st.booleans(), fails=st.booleans())
    def call(self, client: int, slow: bool, fails: bool) -> None:
        idle = self.idle_clients()
        index = idle[client % len(idle)]

        def compute() -> str:
            started = self.scheduler.vclock
            running = [c for c in self.computations if c.finished is None and c.client not in self.dead]
            live = [c for c in running if started < c.started + LEASE_MS / 1000]
            mine = Computation(index, len(self.computations) + 1, started)
            self.computations.append(mine)
            if live and RUNS_ONCE in self.claims:
                self.violations.append(
                    (
                        RUNS_ONCE,
                        f"c{index} started computing while c{live[0].client}'s computation "
                        f"#{live[0].number} was still running inside its lease",
                    )
                )
            if slow:
                time.sleep(LEASE_MS / 2000)
            mine.finished = self.scheduler.vclock
            if fails:
                mine.failed = True
                raise ComputationFailed(f"computation #{mine.number} failed")
            return mine.value

        flight = self.flights[index]
        self.start(index, lambda: flight.call(compute), f"call(slow={slow}, fails={fails})")

    def crashed(self, index: int) -> None:
        self.dead.add(index)

    def check_step(self) -> None:
        if self.violations:
            self.fail(*self.violations[0])

    def completed(self, index: int) -> None:
        client = self.scheduler.clients[index]
        outcome = client.outcome
        finished = {c.value for c in self.computations if c.finished is not None and not c.failed}
        if outcome.error is None:
            if outcome.value not in finished and SHARED_RESULT in self.claims:
                self.fail(
                    SHARED_RESULT,
                    f"{client.name} call returned {outcome.value!r}, "
                    "not the value of any finished computation",
                )
            return
        own_failure = isinstance(outcome.error, ComputationFailed)
        timed_out = "Timeout" in type(outcome.error).__name__  # a bounded wait ending is a clear error
        nothing_failed = not any(c.failed for c in self.computations)
        if LEADER_FAILURE in self.claims and not own_failure and not timed_out and nothing_failed:
            self.fail(
                LEADER_FAILURE,
                f"{client.name} call raised {type(outcome.error).__name__} "
                f"though no computation failed: {outcome.error}",
            )


def machine_for(impl: Any) -> type[SingleFlightMachine]:
    return type(
        f"SingleFlightMachine_{impl.name}",
        (SingleFlightMachine,),
        {"factory": staticmethod(impl.factory), "claims": frozenset(impl.claims)},
    )
