"""The single-flight machine: clients call one key while Hypothesis interleaves them.

Each call passes a function that records its run and returns a value naming
it; Hypothesis decides whether that function is slow (it sleeps, virtually,
for a few polls or for half the lease while others poll) or raises. Properties:

* runs-once: a computation never starts while another one is running whose
  leader is alive and inside its lease; and a caller that joined a flight (its
  call began while the flight's computation ran) never computes again once
  that computation finished inside its lease, while its leader (alive, its call
  not failed) still holds the lease or after the leader returned the value,
  even if the second computation would not overlap the first;
* shared-result: a call that returns gives back the value of a computation
  that finished (never None, never something nobody computed);
* leader-failure: when the computation raised, the callers that waited for it
  raise a clear error (or retry and compute anew): they never return nothing.
"""

from __future__ import annotations

import inspect
import itertools
import time
from dataclasses import dataclass
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.impl.catalog import LEADER_FAILURE, RUNS_ONCE, SHARED_RESULT
from contend.machines.base import ScheduledMachine
from contend.servers.target import Target

LEASE_MS = 10_000
# How long a computation takes, in virtual seconds: at once, a few polls of a waiter, or half
# the lease (waiters poll through it while the leader must keep its lease).
SLOW = (0.0, 0.05, LEASE_MS / 2000)


class ComputationFailed(Exception):
    """What a failing computation raises."""


@dataclass
class Computation:
    client: int
    number: int
    started: float
    finished: float | None = None
    failed: bool = False
    delivered: float | None = None  # when its leader's call returned its value
    # Places in the order of events (calls made, computations started and finished): virtual
    # time does not move between two steps, so it cannot say which came first.
    started_event: int = 0
    finished_event: int | None = None
    leader_raised: bool = False  # its leader's call raised (a lost reply, say): waiters may retry

    @property
    def value(self) -> str:
        return f"computed by c{self.client} (#{self.number})"


class SingleFlightMachine(ScheduledMachine):
    factory: Any = None
    claims: frozenset[str] = frozenset()
    clients = 3
    essential_rules = frozenset({"call", "advance"})
    operation_bound = 4 * LEASE_MS / 1000  # a waiter may wait out a leader's whole lease, and more
    situations: ClassVar[dict[str, str]] = {
        RUNS_ONCE: "a call that began while another client's computation ran",
        SHARED_RESULT: "a call that returned the value another client computed",
        LEADER_FAILURE: "a call under way while another client's computation failed",
    }

    def __init__(self, target: Target, **kwargs: Any) -> None:
        self.flights: list[Any] = []
        self.computations: list[Computation] = []
        self.dead: set[int] = set()
        self.call_started_event: dict[int, int] = {}
        self.events = itertools.count()
        # (property, evidence) found inside a client's computation, reported after the step
        self.violations: list[tuple[str, str]] = []
        super().__init__(target, **kwargs)

    def setup_clients(self) -> None:
        key = self.ns.key("flight")
        self.flights = [self.new_flight(conn, key) for conn in self.connections]

    def new_flight(self, conn: Any, key: str) -> Any:
        """One client's object; with renew=False where the factory takes it: a renewing thread
        would not be a scheduled client, and its round trips would race the schedule."""
        factory = type(self).factory
        try:
            params = inspect.signature(factory).parameters.values()
            renewable = any(p.name == "renew" or p.kind is p.VAR_KEYWORD for p in params)
        except (TypeError, ValueError):
            renewable = False
        if renewable:
            try:
                return factory(conn, key, LEASE_MS, renew=False)
            except TypeError:
                pass
        return factory(conn, key, LEASE_MS)

    @precondition(lambda self: bool(self.idle_clients()))
    @rule(client=st.integers(0, 3), slow=st.sampled_from(SLOW), fails=st.booleans())
    def call(self, client: int, slow: float, fails: bool) -> None:
        idle = self.idle_clients()
        index = idle[client % len(idle)]

        def compute() -> str:
            started = self.scheduler.vclock
            running = [c for c in self.computations if c.finished is None and c.client not in self.dead]
            live = [c for c in running if started < c.started + LEASE_MS / 1000]
            mine = Computation(index, len(self.computations) + 1, started, started_event=next(self.events))
            self.computations.append(mine)
            if live and RUNS_ONCE in self.claims:
                self.violations.append(
                    (
                        RUNS_ONCE,
                        f"c{index} started computing while c{live[0].client}'s computation "
                        f"#{live[0].number} was still running inside its lease",
                    )
                )
            joined = self.joined_flight(index, started)
            if joined is not None and RUNS_ONCE in self.claims:
                self.violations.append(
                    (
                        RUNS_ONCE,
                        f"c{index}'s call began while c{joined.client}'s computation #{joined.number} ran; "
                        f"#{joined.number} finished inside its lease ({(joined.finished or started) - joined.started:.3f} s "
                        f"of {LEASE_MS / 1000:g} s), "
                        + (
                            "and was handed to its caller"
                            if joined.delivered is not None and joined.delivered <= started
                            else f"its leader c{joined.client} still held the lease"
                        )
                        + f", and c{index} then ran the function again (#{mine.number}, virtual time "
                        f"{started:.3f} s)",
                    )
                )
            if slow:
                time.sleep(slow)
            mine.finished = self.scheduler.vclock
            mine.finished_event = next(self.events)
            if fails:
                mine.failed = True
                raise ComputationFailed(f"computation #{mine.number} failed")
            return mine.value

        flight = self.flights[index]
        self.call_started_event[index] = next(self.events)
        if any(c.finished is None and c.client != index for c in self.computations):
            self.met[RUNS_ONCE] += 1
        self.start(index, lambda: flight.call(compute), f"call(slow={slow:g} s, fails={fails})")

    def joined_flight(self, index: int, now: float) -> Computation | None:
        """A successful computation whose flight client `index` joined (its call began while it
        ran): `index` must not compute again while that computation's leader, alive, still holds
        its lease (it has the value to hand over), nor once the leader has handed it over."""
        began = self.call_started_event.get(index)
        lease = LEASE_MS / 1000
        for c in self.computations:
            if (
                c.client != index
                and began is not None
                and c.finished is not None
                and c.finished_event is not None
                and not c.failed
                and not c.leader_raised
                and c.client not in self.dead
                and c.started_event < began < c.finished_event
                and c.finished - c.started < lease
                and ((c.delivered is not None and c.delivered <= now) or now < c.started + lease)
            ):
                return c
        return None

    def crashed(self, index: int) -> None:
        self.dead.add(index)

    def check_step(self) -> None:
        if self.violations:
            self.fail(*self.violations[0])

    def completed(self, index: int) -> None:
        client = self.scheduler.clients[index]
        outcome = client.outcome
        finished = {c.value for c in self.computations if c.finished is not None and not c.failed}
        for c in self.computations:
            if (
                c.client == index
                and outcome.error is None
                and outcome.value == c.value
                and c.delivered is None
            ):
                c.delivered = self.scheduler.vclock
        if outcome.error is not None:
            for c in self.computations:
                if c.client == index and c.delivered is None:
                    c.leader_raised = True
        began = self.call_started_event.get(index, -1)
        if any(c.client != index and c.value == outcome.value for c in self.computations if not c.failed):
            self.met[SHARED_RESULT] += 1
        if any(
            c.client != index and c.failed and c.finished_event is not None and began < c.finished_event
            for c in self.computations
        ):
            self.met[LEADER_FAILURE] += 1
        if self.indeterminate(index):
            return  # it lost a reply and raised: its effect is unknown, its error is no finding
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
        f"SingleFlightMachine_{''.join(c if c.isalnum() else '_' for c in impl.name)}",
        (SingleFlightMachine,),
        {"factory": staticmethod(impl.factory), "claims": frozenset(impl.claims)},
    )
