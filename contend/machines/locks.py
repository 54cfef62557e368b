"""The lock machine: clients acquire and release one lock while Hypothesis interleaves them.

A lease is *valid* from its acquire until `ttl` has passed on the virtual
clock (measured from the acquire's start, the earliest it can have begun) or
until its holder releases it. Rules besides `advance`:

* `acquire(stall)` - a client takes the lock (blocking, with a short virtual
  timeout); with `stall`, it pauses longer than its TTL as soon as it holds
  the lock (a GC pause): the clock jumps by the TTL, so its lease (and every
  key whose TTL passed) expires under it;
* `skew_clock` (locks that read the client's clock) - one client's wall clock
  (time.time) jumps by twice the TTL.

A client that acquired goes on to release at once: its critical section lasts
as long as the schedule keeps that release waiting.

Properties, each checked when the operation that could break it completes:

* mutual-exclusion: an acquire never succeeds while another client holds a
  valid lease (for a semaphore, never more than `limit` valid leases);
* safe-release: a release by a client whose lease expired leaves a successor's
  lease in place (the lock key still exists);
* fencing (fenced locks): every granted token is larger than all before it;
* fifo (fair semaphores): a client is granted only if the valid holders, it,
  and every waiter that asked before it (whose acquire's first effective round
  trip came first, since the last stall) fit in `limit`: nobody is served
  past a waiter that asked earlier;
* crash-liveness (at the end): after a crashed holder's TTL, the lock can be
  taken again.
"""

from __future__ import annotations

import inspect
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.impl.catalog import (
    CLOCK_SKEW_SAFE,
    CRASH_LIVENESS,
    FENCING,
    FIFO,
    MUTUAL_EXCLUSION,
    NO_SPURIOUS_ERRORS,
    SAFE_RELEASE,
)
from contend.impl.locks.errors import LockError, LockNotOwnedError
from contend.machines.base import ScheduledMachine
from contend.schedule.scheduler import TraceEntry
from contend.target.target import Target

TTL_MS = 10_000
ACQUIRE_TIMEOUT = 0.2  # virtual seconds a blocking acquire keeps retrying


class LockMachine(ScheduledMachine):
    """Subclass per implementation with `factory`, `claims` (and `limit` for semaphores) set."""

    factory: Any = None
    claims: frozenset[str] = frozenset()
    limit = 1
    clients = 2
    crash_rule = False  # clients crash through acquire(crash_after=...)
    #: Whether the lock reads the client's wall clock (its factory takes `clock`): then skew matters.
    reads_clock = False

    def __init__(self, target: Target) -> None:
        self.locks: list[Any] = []
        self.holding: dict[int, float] = {}  # client -> virtual time its lease stops being valid
        self.believers: set[int] = set()  # clients whose acquire returned True and who have not released
        self.started_at: dict[int, float] = {}
        self.tokens: list[int] = []
        self.crashed_holders: set[int] = set()
        self.skew_total = 0.0  # every clock jump so far, added up
        self.stalls: set[int] = set()  # clients that stall past their TTL once they hold the lock
        self.crash_plan: dict[int, tuple[int, int]] = {}  # client -> (trace position, round trips)
        self.asked: dict[int, int] = {}  # acquiring client -> trace position of its place in line
        self.last_stall = -1  # trace position of the last stall (places may have expired in it)
        self._scanned = 0  # trace entries looked at for first round trips
        super().__init__(target)

    @property
    def ttl(self) -> float:
        return TTL_MS / 1000

    def setup_clients(self) -> None:
        self.key = self.ns.key("lock")
        kwargs = {"limit": self.limit} if self.limit > 1 else {}
        self.locks = [type(self).factory(conn, self.key, TTL_MS, **kwargs) for conn in self.connections]

    def valid_holders(self) -> set[int]:
        now = self.scheduler.vclock
        return {c for c, until in self.holding.items() if until > now}

    # Rules ------------------------------------------------------------------------------
    @precondition(lambda self: bool(self.idle_clients()))
    @rule(
        client=st.integers(0, 3),
        stall=st.booleans(),
        crash_after=st.one_of(st.none(), st.integers(1, 3)),
    )
    def acquire(self, client: int, stall: bool, crash_after: int | None) -> None:
        """A client takes the lock; once it has it, its release is under way (the critical
        section lasts as long as the schedule keeps that release waiting). With `stall`, the
        holder pauses longer than its TTL right after acquiring (a GC pause). With
        `crash_after`, the client dies after that many round trips of acquire and release."""
        idle = self.idle_clients()
        index = idle[client % len(idle)]  # drawn apart from the state, so examples shrink well
        if stall:
            self.stalls.add(index)
        if crash_after is not None:
            self.crash_plan[index] = len(self.scheduler.trace), crash_after
        lock = self.locks[index]
        self.started_at[index] = self.scheduler.vclock
        self.asked.pop(index, None)
        self.start(index, lambda: lock.acquire(blocking=True, timeout=ACQUIRE_TIMEOUT), "acquire()")

    @precondition(lambda self: self.reads_clock and self.survivors() > 1)
    @rule(data=st.data(), ahead=st.booleans())
    def skew_clock(self, data: st.DataObject, ahead: bool) -> None:
        index = data.draw(st.integers(0, self.clients - 1), label="client")
        self.scheduler.skew(index, (2 if ahead else -2) * self.ttl)
        self.skew_total += 2 * self.ttl

    def after_step(self) -> None:
        """Note places in line, and carry out planned crashes: a client dies once it has made its
        round trips."""
        self.note_first_round_trips()
        for index, (since, round_trips) in list(self.crash_plan.items()):
            name = self.scheduler.clients[index].name
            made = sum(1 for step in self.scheduler.trace[since:] if step.client == name and step.sent)
            if made >= round_trips:
                del self.crash_plan[index]
                if self.survivors() > 1 and (index in self.busy_clients() or index in self.believers):
                    self.scheduler.crash(index)
                    self.in_flight.pop(index, None)
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
        """A stall longer than the lease: the clock jumps, and TTLs run out on it."""
        self.last_stall = len(self.scheduler.trace)
        self.scheduler.advance(self.ttl + 0.001, note=f"a stall longer than the {self.ttl:g} s TTL")

    def crashed(self, index: int) -> None:
        # Mid-acquire (it may have half-taken the lock) or holding: either way its
        # leftovers must not keep the lock taken past the TTL.
        self.crashed_holders.add(index)
        self.believers.discard(index)

    # Checks --------------------------------------------------------------------------
    def completed(self, index: int) -> None:
        client = self.scheduler.clients[index]
        outcome = client.outcome
        if client.operation == "probe acquire":
            return
        if client.operation.startswith("acquire"):
            # A LockError is the lock saying "not acquired" (a queue place that expired
            # during a stall, say): a failed acquire, not a broken property. Anything
            # else escaping acquire is.
            if outcome.error is not None and not isinstance(outcome.error, LockError):
                self.fail(
                    NO_SPURIOUS_ERRORS,
                    f"{client.name} {client.operation} raised {type(outcome.error).__name__}: {outcome.error}",
                )
            granted = bool(outcome.value) and outcome.error is None
            if granted and FIFO in self.claims:
                self.check_order(index)
            if granted:
                self.acquired(index)
                if index in self.stalls:
                    self.stalls.discard(index)
                    self.stall()
                self.start(index, self.locks[index].release, "release()")
        else:
            self.released(index, outcome.error)

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

    def acquired(self, index: int) -> None:
        name = self.scheduler.clients[index].name
        others = self.valid_holders() - {index}
        if len(others) >= self.limit:
            held = ", ".join(self.scheduler.clients[o].name for o in sorted(others))
            skewed = [f"{c.name} {c.skew:+g} s" for c in self.scheduler.clients if c.skew]
            what = CLOCK_SKEW_SAFE if skewed else MUTUAL_EXCLUSION
            why = f"; clocks skewed: {', '.join(skewed)}" if skewed else ""
            self.fail(
                what,
                f"{name} acquired while {held} held valid lease(s) "
                f"(limit {self.limit}, TTL {self.ttl:g} s, virtual time {self.scheduler.vclock:.3f} s{why})",
            )
        self.holding[index] = self.started_at[index] + self.ttl
        self.believers.add(index)
        token = getattr(self.locks[index], "fencing_token", None)
        if token is not None and FENCING in self.claims:
            if self.tokens and token <= max(self.tokens):
                self.fail(FENCING, f"{name} got token {token}, not above {max(self.tokens)} granted before")
            self.tokens.append(int(token))

    def released(self, index: int, error: BaseException | None) -> None:
        name = self.scheduler.clients[index].name
        was_valid = index in self.valid_holders()
        self.believers.discard(index)
        self.holding.pop(index, None)
        if error is not None:
            if was_valid or not isinstance(error, LockNotOwnedError):
                skew = self.scheduler.clients[index].skew
                what = CLOCK_SKEW_SAFE if skew else SAFE_RELEASE
                why = f" (its clock is skewed by {skew:+g} s)" if skew else ""
                self.fail(what, f"{name} released a valid lease and got {type(error).__name__}{why}: {error}")
            return
        successors = self.valid_holders()
        claimed = SAFE_RELEASE in self.claims and self.limit == 1
        if claimed and not was_valid and successors and not self.admin.exists(self.key):
            held = ", ".join(self.scheduler.clients[o].name for o in sorted(successors))
            self.fail(
                SAFE_RELEASE,
                f"{name}'s release after its lease expired deleted the lease "
                f"{held} holds ({self.key} is gone)",
            )

    def check_quiescent(self) -> None:
        if CRASH_LIVENESS not in self.claims or not self.crashed_holders:
            return
        self.finish_all()  # the living give their leases back
        idle = [i for i in self.idle_clients() if i not in self.crashed_holders]
        if not idle:
            return
        probe = idle[0]
        # A lease written by a clock that was ahead (then, not only now) looks valid for longer.
        self.scheduler.advance(self.ttl + self.skew_total + 0.001, note="the crashed holder's TTL passes")
        got: list[bool] = []
        self.start(
            probe, lambda: got.append(bool(self.locks[probe].acquire(blocking=False))), "probe acquire"
        )
        self.finish_all()
        if got != [True]:
            self.fail(
                CRASH_LIVENESS,
                f"a holder crashed; after its {self.ttl:g} s TTL the lock still "
                f"cannot be taken ({self.key} left behind)",
            )


def _takes_a_place(step: TraceEntry) -> bool:
    """A round trip that can put a client in line: not a script load or a NOSCRIPT retry."""
    if not step.sent or str(step.sent[0][0]).upper() == "SCRIPT":
        return False
    return not any(isinstance(reply, BaseException) for reply in step.replies)


def machine_for(impl: Any, *, limit: int = 1) -> type[LockMachine]:
    """A LockMachine subclass for a catalog entry (or anything with factory, claims, name)."""
    try:
        reads_clock = "clock" in inspect.signature(impl.factory).parameters
    except (TypeError, ValueError):
        reads_clock = False
    return type(
        f"LockMachine_{impl.name}",
        (LockMachine,),
        {
            "factory": staticmethod(impl.factory),
            "claims": frozenset(impl.claims),
            "limit": limit,
            "clients": max(2, limit + 1),
            "reads_clock": reads_clock,
        },
    )
