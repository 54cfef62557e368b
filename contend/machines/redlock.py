"""Redlock over five independent masters, and the fault its safety argument rules out.

Five embedded masters are started here, each a real redis-server without persistence. The
lock machine drives `impl.locks.redlock` on them with its usual rules (acquire, release,
extend, crashes, stalls, clock jumps), plus two faults: `cut_off`, a network partition that
cuts one client off from a minority of the masters, and `restart_master`, which kills one
master with SIGKILL and starts it again on the same port, empty, while some client holds the
lock.

Redlock's published argument needs a restarted master to keep its keys (fsync always) or to
stay down longer than a TTL. Without that, a client can win a majority while another still
holds a valid lease: Martin Kleppmann's counterexample ("How to do distributed locking").
Hypothesis finds it here on its own, choosing when to restart which master, and shrinks it.

Holders have a critical section (`contend.machines.fencing`): a holder may stay inside it,
holding the lock, for as long as Hypothesis keeps it there, which is what gives a second client
the time to win its own majority. `demo` searches for it; `contend redlock --runs 20`
(contend.commands.redlock) prints how often and how fast the counterexample is found, the
shrunk counterexample and its size; without the restart rule (`--no-restarts`) the same lock
passes the same search.

What fencing tokens change (Kleppmann's remedy): with `--fence NAME` each holder also writes
to a protected resource on a sixth server, and the property judged is the resource's
(no-stale-write), not the lock's. `--fenced` (`--fence resource`): a token from INCR on the
resource server's own counter, taken after the grant (Redlock hands out none), checked by the
resource; the lock still gets two holders, but the resource refuses the stale one's write.
`--fence none` (no token), `unchecked` (a resource that ignores tokens) and `master` (a counter
on master 1, which restarts empty) let stale writes through, and the same search finds them.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from contend.machines.base import PropertyViolated
from contend.machines.fencing import FENCES, NO_STALE_WRITE
from contend.machines.hunt import SearchStopped, run_once
from contend.machines.locks import LockMachine
from contend.machines.masters import MastersMachine
from contend.machines.settings import shrink_budget
from contend.servers.server import EmbeddedRedis
from contend.servers.target import Target, open_target
from contend.subject.claims import LOCK_CLAIMS
from contend.subject.multi_master import MULTI_MASTER_LOCKS

MASTERS = 5
#: Seconds the first counterexample's shrinking may take by default (`--shrink-seconds`).
SHRINK_SECONDS = 120.0
#: Seconds between two progress lines while shrinking.
PROGRESS_EVERY = 10.0
#: The masters a partition cuts a client off from: a minority.
MINORITY = (MASTERS - 1) // 2


@contextlib.contextmanager
def five_masters(masters: int = MASTERS) -> Iterator[tuple[Target, list[EmbeddedRedis]]]:
    """`masters` embedded masters without persistence, started as every multi-master run starts
    them (`open_target(masters=N)`, keeping the run's clock); the target is the first, the rest
    its `also`, and their processes (for restarts) come with it."""
    with open_target(masters=masters) as target:
        assert target.deployment is not None
        yield target, list(target.deployment.lock_masters)


#: The Redlock implementations the demo can drive: contend's own, and pottery's (pip install -e '.[libs]').
LIBRARIES = {"contend": MULTI_MASTER_LOCKS["redlock"], "pottery": MULTI_MASTER_LOCKS["pottery_redlock"]}


def machine_for(
    target: Target,
    servers: list[EmbeddedRedis],
    *,
    restarts: bool = True,
    lib: str = "contend",
    fence: str | None = None,
    resource_url: str = "",
) -> type[MastersMachine]:
    """The masters machine for Redlock (`lib`'s) over `servers`, masters restarting empty at once
    (Kleppmann's case) when `restarts`, and no master pauses (the search stays on restarts). With
    `fence` (a name in FENCES), holders write to a resource at `resource_url` and the property
    judged is the resource's (no-stale-write), not the lock's."""
    body: dict[str, Any] = {
        "factory": staticmethod(LIBRARIES[lib].over_urls(target.also)),
        "claims": LOCK_CLAIMS if fence is None else frozenset(),
        "servers": servers,
        "restart_at_once": True,
        "fence": None if fence is None else FENCES[fence],
        "resource_url": resource_url,
        "stats": Counter(),
        "pause_master": None,
    }
    if not restarts:
        body["restart_master"] = None
    return type("RedlockMachine", (MastersMachine,), body)


@dataclass
class Demo:
    """How the search went: per seed, seconds to the first violation (None: not found)."""

    times: list[float | None] = field(default_factory=list)
    #: Seeds Hypothesis called flaky (the same example behaved differently): no verdict.
    flaky: int = 0
    searched: float = 0.0  # seconds, every seed's search (not the shrinking)
    stats: dict[str, int] = field(default_factory=dict)  # the machine's counts over the search
    kinds: Counter[str] = field(default_factory=Counter)  # what each seed found (see `kind`)
    shrunk: str = ""
    violation: str = ""
    #: Seconds the shrinking took, and whether its budget ended it.
    shrink_seconds: float = 0.0
    shrink_stopped: bool = False
    clients: int = 0
    round_trips: int = 0
    restarts: int = 0
    partitions: int = 0

    @property
    def found(self) -> list[float]:
        return [t for t in self.times if t is not None]


def kind(violation: PropertyViolated) -> str:
    """A violation's property; for a stale write, also whether the stale holder's lease had run out."""
    if violation.property != NO_STALE_WRITE:
        return violation.property
    expired = "its lease had run out" in violation.detail
    return f"{NO_STALE_WRITE} ({'a holder past its lease' if expired else 'two valid holders'})"


@contextlib.contextmanager
def resource_server(fence: str | None) -> Iterator[str]:
    """The URL of the protected resource's own server (embedded, never restarted), or "" without a fence."""
    if fence is None:
        yield ""
        return
    with EmbeddedRedis() as server:
        yield server.url


def demo(
    runs: int,
    max_examples: int,
    *,
    restarts: bool = True,
    lib: str = "contend",
    fence: str | None = None,
    on_seed: Callable[[str], None] = lambda line: None,
    shrink_seconds: float = SHRINK_SECONDS,
) -> Demo:
    """Search `runs` seeds for a violation, then shrink the first seed's one for up to
    `shrink_seconds`; `on_seed` hears of each seed as it ends, and of the shrinking every
    PROGRESS_EVERY seconds. A seed Hypothesis calls flaky counts as no verdict, not as a miss."""
    result = Demo()
    with five_masters() as (target, servers), resource_server(fence) as resource_url:
        machine = machine_for(
            target, servers, restarts=restarts, lib=lib, fence=fence, resource_url=resource_url
        )
        on_seed(f"{target.description} up; searching {runs} seed(s)")
        for seed in range(runs):
            try:
                seconds, violation, _ = run_once(machine, target, seed, max_examples, shrink=False)
            except SearchStopped as exc:
                result.flaky += 1
                result.times.append(None)
                on_seed(f"seed {seed}: inconclusive ({exc})")
                continue
            result.searched += seconds
            result.times.append(seconds if violation is not None else None)
            on_seed(f"seed {seed}: {kind(violation) if violation else 'nothing found'} in {seconds:.1f} s")
            if violation is not None:
                result.kinds[kind(violation)] += 1
        result.stats = dict(machine.stats)
        if not result.found:
            return result
        seed = next(k for k, t in enumerate(result.times) if t is not None)
        on_seed(f"shrinking seed {seed}'s counterexample (for up to {shrink_seconds:g} s: --shrink-seconds)")
        progress = ShrinkProgress(shrink_seconds, on_seed)
        try:
            with shrink_budget(shrink_seconds):
                _, violation, failed = run_once(
                    _watched(machine, progress), target, seed, max_examples, shrink=True
                )
        except SearchStopped as exc:
            result.violation = f"(not shrunk: {exc}; Hypothesis could not replay the example)"
            return result
        result.shrink_seconds = progress.shrinking()
        result.shrink_stopped = result.shrink_seconds >= shrink_seconds
        if violation is not None and isinstance(failed, LockMachine):
            trace = failed.scheduler.trace
            result.violation = str(violation)
            result.shrunk = failed.scheduler.format_trace()
            probe = failed.scheduler.clients[failed.probe].name  # the harness's, not a worker
            result.clients = len({s.client for s in trace if s.sent and s.client != probe})
            result.round_trips = sum(1 for s in trace if s.sent)
            result.restarts = sum(1 for s in trace if "restarted empty" in s.note)
            result.partitions = sum(1 for s in trace if " is cut off from " in s.note)
    return result


@dataclass
class ShrinkProgress:
    """What the shrinking has done so far, told every PROGRESS_EVERY seconds. The seed is run
    again from its start, so shrinking (and its budget) begins once it fails again."""

    budget: float
    tell: Callable[[str], None]
    told: float = field(default_factory=lambda: time.monotonic())
    began: float | None = None  # when the seed failed again and shrinking began
    examples: int = 0
    failing: int = 0
    smallest: int | None = None  # round trips of the smallest failing example so far

    def shrinking(self) -> float:
        """Seconds since shrinking began (0 before)."""
        return 0.0 if self.began is None else time.monotonic() - self.began

    def ended(self, machine: LockMachine) -> None:
        """An example ended (`machine` ran it): count it, and tell how it goes when it is time."""
        self.examples += 1
        now = time.monotonic()
        if machine.violation is not None:
            self.failing += 1
            self.began = now if self.began is None else self.began
            trips = sum(1 for s in machine.scheduler.trace if s.sent)
            self.smallest = trips if self.smallest is None else min(self.smallest, trips)
        if now - self.told < PROGRESS_EVERY:
            return
        self.told = now
        if self.began is None:
            self.tell(f"shrinking: finding the counterexample again, {self.examples} examples in")
            return
        self.tell(
            f"shrinking: {min(self.shrinking(), self.budget):.0f} s of up to {self.budget:g} s, "
            f"{self.examples} examples tried, {self.failing} failing; the smallest so far: "
            f"{self.smallest} round trips"
        )


def _watched(machine: type[LockMachine], progress: ShrinkProgress) -> type[LockMachine]:
    """`machine`, telling `progress` of each example as it is torn down."""

    def teardown(self: LockMachine) -> None:
        try:
            machine.teardown(self)
        finally:
            progress.ended(self)

    return type(machine.__name__, (machine,), {"teardown": teardown})
