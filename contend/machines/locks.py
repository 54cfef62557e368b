"""The lock machine: clients acquire, extend and release one lock while Hypothesis interleaves them.

A lease is *valid* from its acquire until `ttl` has passed on the virtual
clock (measured from the acquire's start, the earliest it can have begun;
a successful extend of a valid lease restarts it) or until its holder starts
to give it back. Rules besides `advance`:

* `acquire(stall, crash_after, extend)` - a client takes the lock (blocking,
  with a short virtual timeout). Once it has it, it extends it (if the lock
  has `extend` and `extend` was drawn), then releases it: its critical section
  lasts as long as the schedule keeps those steps waiting. With `stall`, the
  holder pauses longer than its TTL right after acquiring; with `crash_after`,
  the client dies after that many round trips of acquire, extend and release;
* `advance(then)` - after the round trips, 0.3 of the TTL passes
  (`pause`), or every client pauses longer than the TTL, between any two round
  trips of their operations (`stall`: a GC pause, a stalled VM);
* `skew_clock` - one client's wall clock (time.time) jumps by twice the TTL.

Properties, each judged by its effect on the other clients, when the
operation that could break it completes (what a release or extend returns or
raises for a lease no longer held is never judged: refusing is correct):

* mutual-exclusion: an acquire never succeeds while another client holds a
  valid lease (for a semaphore, never more than `limit` valid leases);
* safe-release: a release or extend by a client whose lease expired leaves a
  successor's lease as it was: right after a stale release, a probe client
  (one the schedule never picks) cannot take the lock; after a stale extend,
  once the successor's own TTL has run out, the probe can. When the release's
  round trips changed only keys that held the releaser's own token (its own
  copies, on masters the successor did not win), the probe's grant is mutual
  exclusion's finding, not the release's;
* fencing (a lock that exposes a token: what acquire returns, or its
  `fencing_token`): every granted token is larger than all before it, whatever
  the clients' clocks say;
* fifo (fair semaphores): a client is granted only if the valid holders, it,
  and every waiter that asked before it (whose acquire's first effective round
  trip came first, since the last stall) fit in `limit`: nobody is served
  past a waiter that asked earlier;
* crash-liveness (at the end): after a crashed holder's TTL, the lock can be
  taken again;
* progress: no operation runs longer than `operation_bound` virtual seconds.

Leases run out on the server's clock, which keeps the virtual one (TIME-scored
leases in scripts and PXAT expiries included). On a server contend did not start,
which keeps its own time, the judgements that need a lease to run out (stalls,
stale grants, safe-release after an extend, crash-liveness) are not made.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.impl.catalog import (
    CLOCK_SKEW_SAFE,
    CRASH_LIVENESS,
    FENCING,
    FIFO,
    MUTUAL_EXCLUSION,
    PROGRESS,
    SAFE_RELEASE,
    STALE_GRANT,
)
from contend.machines.base import EXPIRED_NOTE, ScheduledMachine
from contend.schedule.scheduler import Status, TraceEntry
from contend.servers.target import Target
from contend.subject.protocols import granted, takes_clock, ttl_resolution

TTL_MS = 10_000
#: Stalls and pauses are drawn rarely (one draw in this many): a stall ends the very leases whose
#: overlap a race needs, so frequent stalls hide races (the battery stalls at every round trip). Yet
#: a stale release or grant needs one: one in 3 finds those in a third to a half of the examples
#: one in 6 took, and the races (mutual exclusion) no later.
_RARELY = 3
#: An acquire plans its client's crash one time in this many (after 1 to 4 of its round trips): a
#: crash leaves one worker, with nobody to race, for the rest of the example.
_CRASH_ONE_IN = 3
#: What an extend asks for: longer than the TTL, so an extend that reaches another holder's key
#: visibly raises its TTL.
EXTEND_MS = 2 * TTL_MS
#: A pause (`advance(then="pause")`) is this share of the TTL.
PAUSE_SHARE = 0.3
ACQUIRE_TIMEOUT = 0.2  # virtual seconds a blocking acquire keeps retrying
#: How long past its timeout a blocking acquire may go on waiting (its own waiting: stalls and
#: pauses the harness imposes do not count): one retry interval, taken as the shortest gap between
#: two of its attempts, but at least DEADLINE_SLACK_MIN (or the lock's TTL step) and, for a lock
#: that waits out a lease in one sleep, at most DEADLINE_SLACK_MAX.
DEADLINE_SLACK_MIN = 0.5
DEADLINE_SLACK_MAX = 2.0


class LockMachine(ScheduledMachine):
    """Subclass per implementation with `factory`, `claims` (and `limit` for semaphores) set.

    Clients 0..workers-1 are the ones Hypothesis drives; the last one is the probe.
    """

    factory: Any = None
    claims: frozenset[str] = frozenset()
    limit = 1
    workers = 2
    clients = 3
    crash_rule = False  # clients crash through acquire(crash_after=...)
    operation_bound = 2 * TTL_MS / 1000 + ACQUIRE_TIMEOUT
    essential_rules = frozenset({"acquire", "advance"})
    judged_on_kept_time = "stalls past a lease, stale-grant, safe-release after an extend, crash-liveness"

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

    # Rules ------------------------------------------------------------------------------
    @precondition(lambda self: bool(self.idle_workers()))
    @rule(
        client=st.integers(0, 3),
        stall=st.sampled_from([False] * (_RARELY - 1) + [True]),
        stall_inside=st.sampled_from([None] * (_RARELY - 1) + [1, 2]),
        crash_after=st.sampled_from([None] * 4 * (_CRASH_ONE_IN - 1) + [1, 2, 3, 4]),
        extend=st.booleans(),
        pause_in_acquire=st.sampled_from([None] * (_RARELY - 1) + [1, 2]),
    )
    def acquire(
        self,
        client: int,
        stall: bool,
        stall_inside: int | None,
        crash_after: int | None,
        extend: bool,
        pause_in_acquire: int | None = None,
    ) -> None:
        """A client takes the lock; once it has it, it extends (if drawn and the lock can) and
        releases it. With `stall`, the holder pauses longer than its TTL right after acquiring
        (a GC pause); with `stall_inside`, after that many round trips of its extend and release
        (between two round trips of one operation); with `pause_in_acquire`, after that many
        round trips of its acquire. With `crash_after`, the client dies after that many round
        trips of acquire, extend and release."""
        idle = self.idle_workers()
        index = idle[client % len(idle)]  # drawn apart from the state, so examples shrink well
        if stall:
            self.stalls.add(index)
        if stall_inside is not None:
            self.stall_inside[index] = stall_inside
        if extend and self.extendable:
            self.extends.add(index)
        if crash_after is not None:
            self.crash_plan[index] = len(self.scheduler.trace), crash_after
        if pause_in_acquire is not None and self.server_keeps_time:
            self.pause_in_acquire[index] = pause_in_acquire
        lock = self.locks[index]
        self.started_at[index] = self.scheduler.vclock
        self.acquire_began[index] = len(self.scheduler.trace)
        self.imposed_at_start[index] = self.scheduler.jumped - self.scheduler.waited
        self.skews_at_start[index] = self.skews
        self.asked.pop(index, None)
        self.start(index, lambda: lock.acquire(blocking=True, timeout=ACQUIRE_TIMEOUT), "acquire()")

    @precondition(lambda self: bool(self.scheduler.runnable()))
    @rule(
        data=st.data(),
        steps=st.integers(1, 4),
        then=st.sampled_from([""] * (2 * _RARELY - 2) + ["pause", "stall"]),
    )
    def advance(self, data: st.DataObject, steps: int, then: str) -> None:
        """Up to `steps` round trips, each by a client Hypothesis picks (0: the current one);
        then, with `then`, 0.3 of the TTL passes (pause) or every client pauses longer
        than the TTL (stall), wherever it is in its operation."""
        self.turn_from_new_holder()
        super().advance(data, steps)
        if then and self.busy_workers() and self.server_keeps_time:
            if then == "stall":
                self.stall()
            else:
                self.scheduler.advance(self.ttl * PAUSE_SHARE, note=f"{self.ttl * PAUSE_SHARE:g} s pass")

    @precondition(lambda self: self.survivors() > 2 and self.reads_wall_clock())
    @rule(data=st.data(), ahead=st.booleans())
    def skew_clock(self, data: st.DataObject, ahead: bool) -> None:
        """One client's wall clock jumps (only once the lock's code has read a wall clock)."""
        index = data.draw(st.integers(0, self.workers - 1), label="client")
        self.scheduler.skew(index, (2 if ahead else -2) * self.ttl)
        self.skew_total += 2 * self.ttl
        self.skews += 1

    def turn_from_new_holder(self) -> None:
        """A client just granted the lock is the last to move on: the schedule's first choice
        (what Hypothesis draws most often, and shrinks to) is another client's round trip, as
        the others run while a holder works in its critical section or is paused there (a
        stall). Without this, the first choice released the lock at once. Any order stays
        possible."""
        held, self.new_holder = self.new_holder, None
        if held is None or self.current != held:
            return
        others = [i for i in self.scheduler.runnable() if i != held]
        if others:
            self.current = others[0]

    def after_step(self) -> None:
        """Note places in line and holders that started giving their lease back, and carry out
        planned crashes: a client dies once it has made its round trips."""
        self.note_first_round_trips()
        last = self.scheduler.trace[-1] if self.scheduler.trace else None
        self.note_release_changes(last)
        if last is not None and last.sent:
            names = {c.name: c.index for c in self.scheduler.clients}
            index = names.get(last.client)
            if index is not None and self.in_flight.get(index, "").startswith("release"):
                self.letting_go.add(index)
        self.check_prolonging(last)
        stepped = last.client if last is not None and last.sent else None
        for index, wanted in list(self.stall_inside.items()):
            since = self.giving_back.get(index)
            name = self.scheduler.clients[index].name
            if since is None or name != stepped:
                continue
            made = sum(1 for step in self.scheduler.trace[since:] if step.client == name and step.sent)
            if made >= wanted:
                del self.stall_inside[index]
                self.stall()
        for index, wanted in list(self.pause_in_acquire.items()):
            since = self.acquire_began.get(index)
            name = self.scheduler.clients[index].name
            if since is None or name != stepped or not self.in_flight.get(index, "").startswith("acquire"):
                continue
            made = sum(1 for step in self.scheduler.trace[since:] if step.client == name and step.sent)
            if made >= wanted:
                del self.pause_in_acquire[index]
                self.stall()
        self.check_deadlines()
        for index, (since, round_trips) in list(self.crash_plan.items()):
            name = self.scheduler.clients[index].name
            if name != stepped:
                continue  # a client dies at one of its own round trips
            made = sum(1 for step in self.scheduler.trace[since:] if step.client == name and step.sent)
            if made >= round_trips:
                del self.crash_plan[index]
                if self.survivors() > 2 and (index in self.busy_clients() or index in self.believers):
                    self.scheduler.crash(index)
                    self.in_flight.pop(index, None)
                    self.op_started.pop(index, None)
                    self.op_waited.pop(index, None)
                    self.crashed(index)

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

    # Deadlines ---------------------------------------------------------------------------
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
        imposed = (self.scheduler.jumped - self.scheduler.waited) - self.imposed_at_start.get(index, 0.0)
        own = self.scheduler.vclock - self.started_at.get(index, self.scheduler.vclock) - imposed
        return own - ACQUIRE_TIMEOUT

    def check_deadlines(self, finished: int | None = None) -> None:
        """progress: a blocking acquire(timeout=t) returns within t plus one retry interval while
        the lock stays held by another client (a dead holder's lease included)."""
        if PROGRESS not in self.judged:
            return
        waiting = [
            i for i, label in self.in_flight.items() if label.startswith("acquire") and i != self.probe
        ]
        for index in [*waiting, *([finished] if finished is not None else [])]:
            late = self.past_deadline(index)
            slack = self.deadline_slack(index)
            if late <= slack:
                continue
            held = sorted(
                (self.valid_holders() | {c for c in self.crashed_holders if self.may_hold(c)}) - {index}
            )
            if not held:
                continue
            names = [c.name for c in self.scheduler.clients]
            when = "returned" if index == finished else "was still waiting"
            self.fail(
                PROGRESS,
                f"{names[index]}'s acquire(timeout={ACQUIRE_TIMEOUT:g}) {when} {late:.3f} s of virtual time "
                f"past its timeout while {', '.join(names[h] for h in held)} held the lock: a blocking "
                f"acquire must return within its timeout plus one retry interval (here {slack:g} s)",
            )

    def crashed(self, index: int) -> None:
        # Mid-acquire (it may have half-taken the lock) or holding: either way its
        # leftovers must not keep the lock taken past the TTL.
        self.crashed_holders.add(index)
        self.crashed_at[index] = self.scheduler.jumped
        self.believers.discard(index)

    def may_hold(self, index: int) -> bool:
        """Might client `index` hold a lease now: it believes it does, or it crashed (or its acquire
        was cancelled) less than the longest lease ago, clock jumps included?"""
        if index in self.believers:
            return True
        since = self.crashed_at.get(index)
        return since is not None and self.scheduler.jumped < since + self.longest_lease + self.skew_total

    # Checks --------------------------------------------------------------------------
    def completed(self, index: int) -> None:
        client = self.scheduler.clients[index]
        outcome = client.outcome
        self.note_release_changes(self.scheduler.trace[-1] if self.scheduler.trace else None)
        if index == self.probe:
            return
        if client.operation.startswith("acquire"):
            # An exception from acquire is a refusal (the protocol says acquire returns a
            # bool, and what happened instead is judged by its effect on the others).
            if self.indeterminate(index):
                # It lost a reply and raised: it may hold a lease it does not know of, as after a
                # crash, and that lease must end with its TTL (crash liveness, at the end).
                self.lost_acquires.add(index)
                self.crashed(index)
                return
            self.check_deadlines(finished=index)
            self.pause_in_acquire.pop(index, None)
            if outcome.error is None and granted(outcome.value):
                if FIFO in self.claims:
                    self.check_order(index)
                self.acquired(index, outcome.value)
                self.check_stale_grant(index, "acquire()", self.acquire_began.get(index, 0))
                self.new_holder = index
                if index in self.stalls:
                    self.stalls.discard(index)
                    self.stall()
                if self.scheduler.clients[index].status is not Status.IDLE:
                    return  # it died meanwhile (a planned crash during a probe)
                self.giving_back[index] = len(self.scheduler.trace)
                if index in self.extends:
                    self.longest_lease = EXTEND_MS / 1000
                    lock = self.locks[index]
                    self.start(index, lambda: lock.extend(EXTEND_MS), f"extend({EXTEND_MS})")
                else:
                    self.start(index, self.locks[index].release, "release()")
        elif client.operation.startswith("extend"):
            value = outcome.value if outcome.error is None else None
            began = self.giving_back.get(index, len(self.scheduler.trace))
            stale_extend = (
                bool(self.stalls_since(began)) and value is not None and value is not False and bool(value)
            )
            self.extended(index, value)
            if stale_extend and not self.failed:
                self.check_stale_grant(index, f"extend({EXTEND_MS})", began)
            if self.scheduler.clients[index].status is Status.IDLE:
                self.start(index, self.locks[index].release, "release()")
        elif client.operation.startswith("release"):
            self.giving_back.pop(index, None)
            self.stall_inside.pop(index, None)
            self.released(index)

    def check_order(self, index: int) -> None:
        """fifo: client `index`, just granted, may not have passed a waiter that asked first."""
        self.note_first_round_trips(finished=index)
        mine = self.asked.get(index)
        if mine is None:
            return
        ahead = sorted(
            w
            for w, label in self.in_flight.items()
            if label.startswith("acquire") and self.last_stall < self.asked.get(w, mine) < mine
        )
        holders = self.valid_holders() - {index}
        if ahead and len(holders) + 1 + len(ahead) > self.limit:
            names = [c.name for c in self.scheduler.clients]
            waiting = ", ".join(names[w] for w in ahead)
            held = ", ".join(names[h] for h in sorted(holders)) or "nobody"
            self.fail(
                FIFO,
                f"{names[index]} was granted while {waiting}, which asked before it, "
                f"still waited for a slot ({held} holding, limit {self.limit})",
            )

    def acquired(self, index: int, value: Any) -> None:
        name = self.scheduler.clients[index].name
        others = self.valid_holders() - {index}
        if len(others) >= self.limit:
            held = ", ".join(self.scheduler.clients[o].name for o in sorted(others))
            skewed = [f"{c.name} {c.skew:+g} s" for c in self.scheduler.clients if c.skew]
            # A clock that jumped while these leases were taken counts even if it jumped back
            # since: the lease values it wrote (or read) were computed with the skewed clock.
            since = min(self.skews_at_start.get(i, self.skews) for i in (*others, index))
            what = CLOCK_SKEW_SAFE if skewed or self.skews > since else MUTUAL_EXCLUSION
            if not skewed and self.skews > since:
                skewed = [f"{self.skews - since} jump(s) while these leases were taken, since undone"]
            why = f"; clocks skewed: {', '.join(skewed)}" if skewed else ""
            self.fail(
                what,
                f"{name} acquired while {held} held valid lease(s) "
                f"(limit {self.limit}, TTL {self.ttl:g} s, virtual time {self.scheduler.vclock:.3f} s{why})",
            )
        inside = self.stalls_since(self.acquire_began.get(index, len(self.scheduler.trace)))
        # A lease taken before a stall inside the acquire had run out: one it reports must have
        # been (re)written after the last such stall (check_stale_grant asks the server).
        begun = max([self.started_at[index], *(after for _, after in inside)])
        self.holding[index] = begun + self.ttl
        self.written_at[index] = self.scheduler.jumped
        self.lease_len[index] = self.ttl
        self.letting_go.discard(index)
        self.believers.add(index)
        token = _token(self.locks[index], value)
        if token is not None and FENCING in self.claims:
            if self.tokens and token <= max(self.tokens):
                skewed = [f"{c.name} {c.skew:+g} s" for c in self.scheduler.clients if c.skew]
                why = f" (clocks skewed: {', '.join(skewed)})" if skewed else ""
                self.fail(
                    FENCING, f"{name} got token {token}, not above {max(self.tokens)} granted before{why}"
                )
            self.tokens.append(token)

    def check_stale_grant(self, index: int, what: str, began: int) -> None:
        """stale-grant: client `index`'s `what`, which began at trace position `began`, reported
        success after a stall longer than the TTL between its round trips: the lease it reports
        must be there, so a third client cannot take the lock right after."""
        inside = self.stalls_since(began)
        if not inside or STALE_GRANT not in self.judged or self.limit != 1 or not self.server_keeps_time:
            return
        if self.valid_holders() - {index} or any(
            label.startswith("acquire") for c, label in self.in_flight.items() if c != index
        ):
            return  # another holder (mutual exclusion judges that) or acquirer: the probe would say nothing
        if self.scheduler.clients[index].status is not Status.IDLE:
            return  # it died meanwhile (a planned crash)
        name = self.scheduler.clients[index].name
        trace = self.scheduler.trace
        first = next(
            (i for i in range(began, len(trace)) if trace[i].client == name and trace[i].sent), began
        )
        if not any(EXPIRED_NOTE in entry.note for entry in trace[first:]) and not self.own_clock_ran_out(
            index, first, inside
        ):
            return  # nothing it wrote can have run out: a lease that is gone was taken (safe release judges)
        if self.probe_acquires():
            names = [c.name for c in self.scheduler.clients]
            at, after = inside[-1]
            self.fail(
                STALE_GRANT,
                f"{names[index]}'s {what} returned success at virtual time {self.scheduler.vclock:.3f} s, "
                f"after a stall of {self.stall_length:g} s (longer than the {self.ttl:g} s TTL) between its "
                f"round trips (step #{at}, ending at {after:.3f} s), and the lease it reports was not "
                "there: a third client took the lock right after",
            )

    def own_clock_ran_out(self, index: int, first: int, inside: list[tuple[int, float]]) -> bool:
        """A lease the lock times by its client's wall clock (an expiry time as the value, no TTL on
        the server) ran out in a stall that came after the operation's first round trip, unless
        another client sent anything since: a lease someone else took away is safe release's to
        judge, not a stale grant."""
        client = self.scheduler.clients[index]
        later = [at for at, _ in inside if at > first]
        if not later or not (client.read_wall_clock or self.takes_clock):
            return False
        return not any(e.sent and e.client != client.name for e in self.scheduler.trace[later[-1] :])

    @property
    def judged(self) -> frozenset[str]:
        """The properties judged: the claims, and progress for every lock."""
        return self.claims | {PROGRESS}

    def extended(self, index: int, value: Any) -> None:
        """An extend returned `value` (None if it raised). True from a holder whose lease was
        valid restarts it; one that returns after its lease ran out must not have touched a
        successor's lease (checked once the successor's own TTL has run out)."""
        started = self.last_op_started
        until = self.holding.get(index, -1.0)
        if self.surely_expired(index):
            self.after_stale(index, "extend")
            return
        if until > started and value is not None and value is not False and bool(value):
            self.holding[index] = max(until, started + EXTEND_MS / 1000)
            self.written_at[index] = self.scheduler.jumped
            self.lease_len[index] = EXTEND_MS / 1000

    def surely_expired(self, index: int) -> bool:
        """Has client `index`'s lease surely run out? Its lease may have been written as late as
        its acquire's (or extend's) last round trip: only its TTL of clock jumps after that ends it
        for sure. (For mutual exclusion a lease counts from the acquire's start: the other way
        round, it surely ran until then.)"""
        written = self.written_at.get(index)
        return written is None or self.scheduler.jumped >= written + self.lease_len.get(index, self.ttl)

    def released(self, index: int) -> None:
        stale = self.surely_expired(index)
        self.believers.discard(index)
        self.holding.pop(index, None)
        self.letting_go.discard(index)
        if stale:
            self.after_stale(index, "release")

    def after_stale(self, index: int, what: str) -> None:
        """safe-release: client `index`'s `what` came after its lease expired; a successor's
        lease must be as it was."""
        successors = self.valid_holders() - {index}
        if SAFE_RELEASE not in self.claims or self.limit != 1 or not successors:
            return
        if any(label.startswith("acquire") for c, label in self.in_flight.items() if c != index):
            return  # another acquire may hold the key already: the probe would say nothing
        names = [c.name for c in self.scheduler.clients]
        successor = min(successors)
        if what == "release":
            if self.probe_acquires():
                if self.released_only_own(index, successor):
                    if MUTUAL_EXCLUSION in self.claims:
                        self.fail(
                            MUTUAL_EXCLUSION,
                            f"a third client acquired while {names[successor]} holds a valid lease "
                            f"(virtual time {self.scheduler.vclock:.3f} s); {names[index]}'s release "
                            "of its expired lease before it changed only keys that held its own token",
                        )
                    return
                self.fail(
                    SAFE_RELEASE,
                    f"{names[index]}'s release after its lease expired freed the lease {names[successor]} "
                    f"holds: a third client acquired right after (virtual time {self.scheduler.vclock:.3f} s)",
                )
            return
        if not self.server_keeps_time or successor in self.extends:
            return  # its lease does not run out on the virtual clock, or it extends it itself
        honest_end = self.written_at[successor] + self.lease_len.get(successor, self.ttl)
        self.scheduler.advance(
            max(0.0, honest_end - self.scheduler.jumped) + self.past,
            note=f"{names[successor]} pauses until its own lease must have run out",
        )
        if not self.probe_acquires():
            self.fail(
                SAFE_RELEASE,
                f"{names[index]}'s extend after its lease expired prolonged the lease {names[successor]} "
                f"holds: {self.ttl:g} s after {names[successor]} last wrote it, a third client still "
                "cannot acquire",
            )

    def before_step(self, index: int) -> None:
        """Before a round trip of an extend whose lease has run out while another client holds
        the lock, read the TTLs of the keys the clients named: the extend must not raise one.
        Before a round trip of such a release, read the keys' values (`note_release_changes`)."""
        self.ttls_before = None
        self.release_before = None
        if (
            SAFE_RELEASE in self.claims
            and self.limit == 1
            and self.in_flight.get(index, "").startswith("release")
            and self.surely_expired(index)
            and self.valid_holders() - {index}
            and self._known_keys
        ):
            self.release_before = index, self.key_values()
        stale = self.surely_expired(index)
        if (
            SAFE_RELEASE in self.claims
            and self.limit == 1
            and stale
            and self.in_flight.get(index, "").startswith("extend")
            and self.valid_holders() - {index}
            and self._known_keys
        ):
            self.ttls_before = index, self.key_ttls()

    def key_ttls(self) -> dict[str, int]:
        """PTTL (ms) of every key of the namespace the clients have named."""
        keys = sorted(self._known_keys)
        with self.admin.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.pttl(key)
            return dict(zip(keys, pipe.execute(), strict=True))

    def check_prolonging(self, last: TraceEntry | None) -> None:
        """safe-release: the stale extend's round trip just taken raised no key's TTL."""
        if self.ttls_before is None or last is None or not last.sent:
            return
        index, before = self.ttls_before
        self.ttls_before = None
        names = [c.name for c in self.scheduler.clients]
        if last.client != names[index]:
            return
        after = self.key_ttls()
        raised = [
            (k, ms, after.get(k, -2)) for k, ms in before.items() if ms > 0 and after.get(k, -2) > ms + 1
        ]
        if raised:
            key, was, now = raised[0]
            holder = names[min(self.valid_holders() - {index})]
            self.fail(
                SAFE_RELEASE,
                f"{names[index]}'s extend after its lease expired prolonged the lease {holder} holds: "
                f"{key} had {was} ms left and has {now} ms after {names[index]}'s round trip",
            )

    def key_values(self) -> dict[tuple[str, str], bytes | None]:
        """The value of every key the clients named, on every server and database the namespace
        spans ((where, key) -> GET's reply; a key of another type reads as its type's name)."""
        keys = sorted(self._known_keys)
        values: dict[tuple[str, str], bytes | None] = {}
        for where, client in self.ns.stores():
            with client.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.get(key)
                replies = pipe.execute(raise_on_error=False)
            for key, reply in zip(keys, replies, strict=True):
                values[where, key] = b"<not a string>" if isinstance(reply, Exception) else reply
        return values

    def note_release_changes(self, last: TraceEntry | None) -> None:
        """After a stale release's round trip (from `after_step`, or from `completed` when it
        was the last and its end is judged first): note what the keys it changed held before."""
        if self.release_before is None or last is None or not last.sent:
            return
        index, before = self.release_before
        self.release_before = None
        if last.client != self.scheduler.clients[index].name:
            return
        after = self.key_values()
        changed = [value for place, value in before.items() if after.get(place) != value]
        self.release_changed.setdefault(index, []).extend(changed)

    def released_only_own(self, index: int, successor: int) -> bool:
        """Did client `index`'s stale release change only keys holding a value it sent itself
        (its token) and the successor did not? Then it gave back its own copies: the successor's
        lease is as it was."""
        changed = self.release_changed.pop(index, [])

        def arguments_sent(client: int) -> set[str]:
            name = self.scheduler.clients[client].name
            trace = self.scheduler.trace
            return {str(arg) for step in trace if step.client == name for cmd in step.sent for arg in cmd[1:]}

        own, theirs = arguments_sent(index), arguments_sent(successor)
        for value in changed:
            if value is None:
                return False  # a key made by the release: not its own copy given back
            text = value.decode(errors="replace")
            if text not in own or text in theirs:
                return False
        return True

    def probe_acquires(self) -> bool:
        """Can the probe client take the lock right now? (It gives it back if it can.)"""
        self.retired.append(self.locks[self.probe])  # kept alive: a finalizer must not run mid-example
        lock = self.locks[self.probe] = self.new_lock(self.probe)
        outcome = self.run_alone(self.probe, lambda: lock.acquire(blocking=False), "probe acquire()")
        got = outcome.error is None and granted(outcome.value)
        if got:
            self.run_alone(self.probe, lock.release, "probe release()")
        return got

    def check_quiescent(self) -> None:
        if CRASH_LIVENESS not in self.claims or not self.crashed_holders or not self.server_keeps_time:
            return
        self.finish_all()  # the living give their leases back
        # A lease written by a clock that was ahead (then, not only now) looks valid for longer,
        # and an extended one lasts the extend's TTL.
        self.scheduler.advance(
            self.longest_lease + self.skew_total + self.past, note="the crashed holder's TTL passes"
        )
        if not self.probe_acquires():
            what = (
                "an acquire lost its reply and raised"
                if self.crashed_holders <= self.lost_acquires
                else "a holder crashed"
            )
            self.fail(
                CRASH_LIVENESS,
                f"{what}; after its {self.longest_lease:g} s TTL the lock still cannot be taken "
                f"(left behind under {self.key})",
            )


def _token(lock: Any, value: Any) -> int | None:
    """A fencing token: what acquire returned (an int, not True), else the lock's `fencing_token`."""
    for candidate in (value, getattr(lock, "fencing_token", None)):
        if isinstance(candidate, int) and not isinstance(candidate, bool):
            return candidate
    return None


def _takes_a_place(step: TraceEntry) -> bool:
    """A round trip that can put a client in line: not a script load or a NOSCRIPT retry."""
    if not step.sent or str(step.sent[0][0]).upper() == "SCRIPT":
        return False
    return not any(isinstance(reply, BaseException) for reply in step.replies)


def machine_for(impl: Any, *, limit: int = 1) -> type[LockMachine]:
    """A LockMachine subclass for a catalog entry (or anything with factory, claims, name)."""
    workers = max(2, limit + 1)
    return type(
        f"LockMachine_{_safe(impl.name)}",
        (LockMachine,),
        {
            "factory": staticmethod(impl.factory),
            "claims": frozenset(impl.claims),
            "limit": limit,
            "workers": workers,
            "clients": workers + 1,
        },
    )


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)
