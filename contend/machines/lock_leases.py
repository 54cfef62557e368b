"""The lock machine's book of leases: who holds one until when, and what ends them.

Each client's lease is noted when its acquire (or extend) reports success, with the virtual
times that bound it; stalls and crashes are noted as they happen. The judgements read this book:
contend.machines.stale_leases (a lease used after it ran out) and contend.machines.locks (the
rules, and what each grant must respect). The probe client, one the schedule never picks, asks
the server whether the lock can be taken right now.
"""

from __future__ import annotations

import itertools
from typing import Any

from contend.impl.catalog import PROGRESS
from contend.machines.base import ScheduledMachine
from contend.schedule.trace import TraceEntry
from contend.servers.target import Target
from contend.subject.protocols import granted, takes_clock, ttl_resolution

TTL_MS = 10_000
#: What an extend asks for: longer than the TTL, so an extend that reaches another holder's key
#: visibly raises its TTL.
EXTEND_MS = 2 * TTL_MS
ACQUIRE_TIMEOUT = 0.2  # virtual seconds a blocking acquire keeps retrying
#: How long past its timeout a blocking acquire may go on waiting (its own waiting: stalls and
#: pauses the harness imposes do not count): one retry interval, taken as the shortest gap between
#: two of its attempts, but at least DEADLINE_SLACK_MIN (or the lock's TTL step) and, for a lock
#: that waits out a lease in one sleep, at most DEADLINE_SLACK_MAX.
DEADLINE_SLACK_MIN = 0.5
DEADLINE_SLACK_MAX = 2.0


class LeaseBook(ScheduledMachine):
    """The state the lock machine keeps per client, and the bookkeeping of time and leases.

    Clients 0..workers-1 are the ones Hypothesis drives; the last one is the probe.
    """

    factory: Any = None
    claims: frozenset[str] = frozenset()
    limit = 1
    workers = 2
    clients = 3

    def __init__(self, target: Target, **kwargs: Any) -> None:
        self.locks: list[Any] = []
        self.retired: list[Any] = []  # lock objects no longer used, kept until the example ends
        self.holding: dict[int, float] = {}  # client -> virtual time its lease stops being surely valid
        # client -> jumped time its lease was last (re)written (at the latest), and the TTL it asked for
        self.written_at: dict[int, float] = {}
        self.lease_len: dict[int, float] = {}
        # holders whose release has made a round trip: the lease may be gone
        self.letting_go: set[int] = set()
        self.believers: set[int] = set()  # clients whose acquire returned True and who have not released
        self.started_at: dict[int, float] = {}
        self.tokens: list[int] = []
        self.crashed_holders: set[int] = set()
        self.crashed_at: dict[int, float] = {}  # crashed holder -> jumped time of its crash
        self.lost_acquires: set[int] = set()  # acquires that lost a reply and raised (counted as crashed)
        self.skew_total = 0.0  # every clock jump so far, added up
        self.skews = 0  # clock jumps so far
        self.skews_at_start: dict[int, int] = {}  # client → clock jumps before its acquire began
        self.stalls: set[int] = set()  # clients that stall past their TTL once they hold the lock
        self.new_holder: int | None = None  # a client just granted: the others move first
        #: A stale release's round trip about to be taken: (client, the keys' values before it).
        self.release_before: tuple[int, dict[tuple[str, str], bytes | None]] | None = None
        #: Per stale releaser: the values its release's round trips changed (what they held before).
        self.release_changed: dict[int, list[bytes | None]] = {}
        self.longest_lease = TTL_MS / 1000  # the longest lease a client may have asked for (an extend's)
        self.extends: set[int] = set()  # clients that extend once they hold the lock
        self.crash_plan: dict[int, tuple[int, int]] = {}  # client -> (trace position, round trips)
        self.stall_inside: dict[int, int] = {}  # client -> round trips into extend/release, then a stall
        self.giving_back: dict[int, int] = {}  # client -> trace position its extend/release began
        self.ttls_before: tuple[int, dict[str, int]] | None = None  # a stale extend's step: PTTLs before
        self.values_before: dict[tuple[str, str], bytes | None] = {}  # and the keys' values then
        self.asked: dict[int, int] = {}  # acquiring client -> trace position of its place in line
        self.last_stall = -1  # trace position of the last stall (places may have expired in it)
        self.stall_log: list[tuple[int, float]] = []  # each stall: (trace position, virtual time after it)
        self.acquire_began: dict[int, int] = {}  # acquiring client -> trace position its acquire began
        self.pause_in_acquire: dict[int, int] = {}  # client -> round trips into its acquire, then a stall
        # acquiring client -> (jumped - waited) when it began: the harness's pauses and stalls so far
        self.imposed_at_start: dict[int, float] = {}
        self._scanned = 0  # trace entries looked at for first round trips
        super().__init__(target, **kwargs)

    @property
    def ttl(self) -> float:
        return TTL_MS / 1000

    @property
    def probe(self) -> int:
        return self.clients - 1

    def setup_clients(self) -> None:
        self.takes_clock = takes_clock(type(self).factory)
        self.key = self.ns.key("lock")
        self.locks = [self.new_lock(index) for index in range(self.clients)]
        self.extendable = callable(getattr(self.locks[0], "extend", None))

    def new_lock(self, index: int) -> Any:
        kwargs = {"limit": self.limit} if self.limit > 1 else {}
        return type(self).factory(self.connections[index], self.key, TTL_MS, **kwargs)

    def valid_holders(self) -> set[int]:
        """Clients surely holding a valid lease now (one giving it back may already have)."""
        now = self.scheduler.vclock
        return {c for c, until in self.holding.items() if until > now and c not in self.letting_go}

    def reads_wall_clock(self) -> bool:
        """Does the lock read the client's wall clock (its factory takes `clock`, or its code has
        called time.time() in a client)? Then clock skew matters to it."""
        return self.takes_clock or any(c.read_wall_clock for c in self.scheduler.clients)

    def idle_workers(self) -> list[int]:
        return [i for i in self.idle_clients() if i != self.probe]

    def busy_workers(self) -> list[int]:
        return [i for i in self.busy_clients() if i != self.probe]

    @property
    def judged(self) -> frozenset[str]:
        """The properties judged: the claims, and progress for every lock."""
        return self.claims | {PROGRESS}

    def surely_expired(self, index: int) -> bool:
        """Has client `index`'s lease surely run out? Its lease may have been written as late as
        its acquire's (or extend's) last round trip: only its TTL of clock jumps after that ends it
        for sure. (For mutual exclusion a lease counts from the acquire's start: the other way
        round, it surely ran until then.)"""
        written = self.written_at.get(index)
        return written is None or self.scheduler.jumped >= written + self.lease_len.get(index, self.ttl)

    def may_hold(self, index: int) -> bool:
        """Might client `index` hold a lease now: it believes it does, or it crashed (or its acquire
        was cancelled) less than the longest lease ago, clock jumps included?"""
        if index in self.believers:
            return True
        since = self.crashed_at.get(index)
        return since is not None and self.scheduler.jumped < since + self.longest_lease + self.skew_total

    def crashed(self, index: int) -> None:
        # Mid-acquire (it may have half-taken the lock) or holding: either way its
        # leftovers must not keep the lock taken past the TTL.
        self.crashed_holders.add(index)
        self.crashed_at[index] = self.scheduler.jumped
        self.believers.discard(index)

    def probe_acquires(self) -> bool:
        """Can the probe client take the lock right now? (It gives it back if it can.)"""
        self.retired.append(self.locks[self.probe])  # kept alive: a finalizer must not run mid-example
        lock = self.locks[self.probe] = self.new_lock(self.probe)
        outcome = self.run_alone(self.probe, lambda: lock.acquire(blocking=False), "probe acquire()")
        got = outcome.error is None and granted(outcome.value)
        if got:
            self.run_alone(self.probe, lock.release, "probe release()")
        return got

    # Places in line -------------------------------------------------------------------
    def note_first_round_trips(self, finished: int | None = None) -> None:
        """Where in the trace each acquire in flight (and `finished`, an acquire that just
        ended) made its first round trip: its place in line."""
        trace = self.scheduler.trace
        names = {c.name: c.index for c in self.scheduler.clients}
        for position in range(self._scanned, len(trace)):
            index = names.get(trace[position].client)
            step = trace[position]
            if index is None or index in self.asked or not _takes_a_place(step):
                continue
            if index == finished or self.in_flight.get(index, "").startswith("acquire"):
                self.asked[index] = position
        self._scanned = len(trace)

    # Stalls ---------------------------------------------------------------------------
    def stall(self) -> None:
        """A stall longer than the lease: the clock jumps, and the servers' TTLs run out with it. (On a
        server that keeps its own time no lease runs out on the virtual clock: nothing to stall.)"""
        if not self.server_keeps_time:
            return
        self.last_stall = len(self.scheduler.trace)
        self.scheduler.advance(self.stall_length, note=f"a stall longer than the {self.ttl:g} s TTL")
        self.stall_log.append((self.last_stall, self.scheduler.vclock))

    @property
    def stall_length(self) -> float:
        """A stall: just longer than the TTL (`past`)."""
        return self.ttl + self.past

    @property
    def past(self) -> float:
        """How far past a lease's end the machine's own jumps go, so that the lease has surely run
        out on the server, which keeps the virtual clock to the millisecond: one millisecond, or the
        granularity of the lock's leases if its factory declares a coarser one (`ttl_resolution_ms`)."""
        return ttl_resolution(type(self).factory) / 1000

    def stalls_since(self, position: int) -> list[tuple[int, float]]:
        """The stalls that came after trace position `position`: (position, virtual time after)."""
        return [(at, after) for at, after in self.stall_log if at >= position]

    # Deadlines ------------------------------------------------------------------------
    def deadline_slack(self, index: int) -> float:
        """One retry interval of client `index`'s acquire: the shortest gap between two of its
        round trips, within [DEADLINE_SLACK_MIN (or the TTL step), DEADLINE_SLACK_MAX]."""
        name = self.scheduler.clients[index].name
        since = self.acquire_began.get(index, len(self.scheduler.trace))
        times = [step.vtime for step in self.scheduler.trace[since:] if step.client == name and step.sent]
        gaps = [b - a for a, b in itertools.pairwise(times) if b > a]
        floor = max(DEADLINE_SLACK_MIN, ttl_resolution(type(self).factory) / 1000)
        return max(floor, min(min(gaps, default=floor), DEADLINE_SLACK_MAX))

    def past_deadline(self, index: int) -> float:
        """How long client `index`'s acquire has waited past its timeout, counting its own time
        only (the harness's pauses and stalls are not its doing)."""
        imposed = (self.scheduler.jumped - self.scheduler.waited_by(index)) - self.imposed_at_start.get(
            index, 0.0
        )
        own = self.scheduler.vclock - self.started_at.get(index, self.scheduler.vclock) - imposed
        return own - ACQUIRE_TIMEOUT


def _takes_a_place(step: TraceEntry) -> bool:
    """A round trip that can put a client in line: not a script load or a NOSCRIPT retry."""
    if not step.sent or str(step.sent[0][0]).upper() == "SCRIPT":
        return False
    return not any(isinstance(reply, BaseException) for reply in step.replies)
