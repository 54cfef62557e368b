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

from typing import Any, ClassVar

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
from contend.machines.lock_leases import ACQUIRE_TIMEOUT, EXTEND_MS, TTL_MS
from contend.machines.stale_leases import StaleLeases
from contend.schedule.client import Status
from contend.subject.protocols import granted

#: Of this many release or extend round trips while another client waits, two lose their reply.
LOSE_RELEASE_ONE_IN = 4
#: Stalls and pauses are drawn rarely (one draw in this many): a stall ends the very leases whose
#: overlap a race needs, so frequent stalls hide races (the battery stalls at every round trip). Yet
#: a stale release or grant needs one: one in 3 finds those in a third to a half of the examples
#: one in 6 took, and the races (mutual exclusion) no later.
_RARELY = 3
#: An acquire plans its client's crash one time in this many (after 1 to 4 of its round trips): a
#: crash leaves one worker, with nobody to race, for the rest of the example.
_CRASH_ONE_IN = 3
#: A pause (`advance(then="pause")`) is this share of the TTL.
PAUSE_SHARE = 0.3
#: The round trips a waiter whose wall clock was set back may make on its own (`wait_on_alone`):
#: a poll every 15 ms reaches its timeout plus the largest slack in about 150.
SKEWED_WAIT_STEPS = 200


class LockMachine(StaleLeases):
    """Subclass per implementation with `factory`, `claims` (and `limit` for semaphores) set.

    Clients 0..workers-1 are the ones Hypothesis drives; the last one is the probe. The state
    kept per client is contend.machines.lock_leases'; safe-release and stale-grant are
    contend.machines.stale_leases'.
    """

    crash_rule = False  # clients crash through acquire(crash_after=...)
    operation_bound = 2 * TTL_MS / 1000 + ACQUIRE_TIMEOUT
    essential_rules = frozenset({"acquire", "advance"})
    judged_on_kept_time = "stalls past a lease, stale-grant, safe-release after an extend, crash-liveness"
    situations: ClassVar[dict[str, str]] = {
        MUTUAL_EXCLUSION: "a grant while another client held the lock or was acquiring it",
        SAFE_RELEASE: "a release or extend after its lease ran out, while a successor held the lock",
        STALE_GRANT: "an acquire or extend that returned success after a stall longer than the TTL inside it",
        CRASH_LIVENESS: "a holder that crashed (or an acquire that lost its reply), then its TTL passing",
        CLOCK_SKEW_SAFE: "a grant while a client's wall clock was skewed (by a lock that reads one)",
        FENCING: "a grant after another, their tokens compared",
        FIFO: "a grant while a client that asked before it still waited",
        PROGRESS: "a blocking acquire(timeout) that had to wait",
    }

    @classmethod
    def situations_judged(cls) -> dict[str, str]:
        """safe-release and stale-grant are judged on a lock of one holder only."""
        if cls.limit == 1:
            return dict(cls.situations)
        return {p: s for p, s in cls.situations.items() if p not in (SAFE_RELEASE, STALE_GRANT)}

    # Rules ----------------------------------------------------------------------------
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
        self.imposed_at_start[index] = self.scheduler.jumped - self.scheduler.waited_by(index)
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
        """One client's wall clock jumps (only once the lock's code has read a wall clock): as
        often as not one waiting in an acquire, where a deadline read off the wall clock bites."""
        acquiring = [
            i for i, label in self.in_flight.items() if label.startswith("acquire") and i != self.probe
        ]
        during: bool = bool(acquiring)
        if during:
            during = data.draw(st.booleans(), label="during an acquire")
        if during:
            index = data.draw(st.sampled_from(acquiring), label="client")
        else:
            index = data.draw(st.integers(0, self.workers - 1), label="client")
        self.scheduler.skew(index, (2 if ahead else -2) * self.ttl)
        self.skew_total += 2 * self.ttl
        self.skews += 1
        if during and not ahead:
            self.wait_on_alone(index)

    def wait_on_alone(self, index: int) -> None:
        """A waiter whose wall clock was set back polls on while the other clients are slow
        (the holder keeps its lease, as a holder at work does): past its timeout and slack
        only if its deadline was read off the wall clock, which is where such a deadline
        bites. Bounded by SKEWED_WAIT_STEPS round trips."""

        def done() -> bool:
            waiting = self.in_flight.get(index, "").startswith("acquire")
            return not waiting or self.past_deadline(index) > self.deadline_slack(index)

        self.step_alone(index, SKEWED_WAIT_STEPS, until=done)

    def lost_reply_odds(self, index: int) -> int:
        """A release's or an extend's reply while another client waits for the lock is the one
        whose loss bites hardest (a fallback DEL, a resent give-back: the waiter is who it
        harms): there one in LOSE_RELEASE_ONE_IN is lost."""
        label = self.in_flight.get(index, "")
        waiting = [i for i in self.busy_workers() if i != index]
        if waiting and label.startswith(("release", "extend")):
            return LOSE_RELEASE_ONE_IN
        return super().lost_reply_odds(index)

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

    # Checks ---------------------------------------------------------------------------
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
                if self.valid_holders() - {index} or any(
                    label.startswith("acquire") for c, label in self.in_flight.items() if c != index
                ):
                    self.met[MUTUAL_EXCLUSION] += 1
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
            self.check_prolonging(self.scheduler.trace[-1] if self.scheduler.trace else None)
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
        if ahead:
            self.met[FIFO] += 1
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
        if (
            not self.reads_wall_clock()  # no skew can matter to it
            or any(c.skew for c in self.scheduler.clients)
            or self.skews > self.skews_at_start.get(index, self.skews)
        ):
            self.met[CLOCK_SKEW_SAFE] += 1
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
            if self.tokens:
                self.met[FENCING] += 1
            if self.tokens and token <= max(self.tokens):
                skewed = [f"{c.name} {c.skew:+g} s" for c in self.scheduler.clients if c.skew]
                why = f" (clocks skewed: {', '.join(skewed)})" if skewed else ""
                self.fail(
                    FENCING, f"{name} got token {token}, not above {max(self.tokens)} granted before{why}"
                )
            self.tokens.append(token)

    def check_deadlines(self, finished: int | None = None) -> None:
        """progress: a blocking acquire(timeout=t) returns within t plus one retry interval of its
        own virtual time from its call, whatever happens meanwhile (the lock held by another
        client, a dead holder's lease, the lock freed while it slept, a wall clock set back)."""
        if PROGRESS not in self.judged:
            return
        waiting = [
            i for i, label in self.in_flight.items() if label.startswith("acquire") and i != self.probe
        ]
        if finished is not None and self.past_deadline(finished) + ACQUIRE_TIMEOUT > 0:
            self.met[PROGRESS] += 1
        for index in [*waiting, *([finished] if finished is not None else [])]:
            late = self.past_deadline(index)
            slack = self.deadline_slack(index)
            if late <= slack:
                continue
            held = sorted(
                (self.valid_holders() | {c for c in self.crashed_holders if self.may_hold(c)}) - {index}
            )
            names = [c.name for c in self.scheduler.clients]
            when = "returned" if index == finished else "was still waiting"
            holders = (
                f"while {', '.join(names[h] for h in held)} held the lock" if held else "(the lock free)"
            )
            skewed = [f"{c.name} {c.skew:+g} s" for c in self.scheduler.clients if c.skew]
            clocks = f"; wall clocks skewed: {', '.join(skewed)}" if skewed else ""
            self.fail(
                PROGRESS,
                f"{names[index]}'s acquire(timeout={ACQUIRE_TIMEOUT:g}) {when} {late:.3f} s of virtual time "
                f"past its timeout {holders}{clocks}: a blocking acquire must return within its timeout "
                f"plus one retry interval (here {slack:g} s) of its call, counting its own time",
            )

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

    def released(self, index: int) -> None:
        stale = self.surely_expired(index)
        self.believers.discard(index)
        self.holding.pop(index, None)
        self.letting_go.discard(index)
        if stale:
            self.after_stale(index, "release")

    def check_quiescent(self) -> None:
        if CRASH_LIVENESS not in self.claims or not self.crashed_holders or not self.server_keeps_time:
            return
        self.finish_all()  # the living give their leases back
        # A lease written by a clock that was ahead (then, not only now) looks valid for longer,
        # and an extended one lasts the extend's TTL.
        self.scheduler.advance(
            self.longest_lease + self.skew_total + self.past, note="the crashed holder's TTL passes"
        )
        self.met[CRASH_LIVENESS] += 1
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
