"""The rate-limiter machine: clients hit one key while Hypothesis interleaves their round trips.

Three workers share one limiter key (`LIMIT` per `WINDOW_MS`, on the virtual clock the server
keeps). Besides `advance` (whose round trips may lose their replies; a resent command may count
twice), Hypothesis may crash a worker in the middle of a hit, stall every client between two round
trips (`advance(stall=True)`), let time pass (`wait`: a share of the window, or more than one), and
jump one client's wall clock by half a window or a whole one (`skew_clock`, once the limiter's code
has read it). Each hit's outcome is judged when it returns, by the envelope of models.rate_limiter:

* over-admission (`fixed-window`, `sliding-log`, `token-bucket`: whichever are claimed) when a hit
  is admitted; found while a client's clock is skewed, it is clock-skew-safe's finding;
* no-false-refusal when a hit is refused (or raises, its reply not lost) with room for it;
* no-stuck-key at the end: every operation is run to its end, and no key of the limiter's is left
  without an expiry (PTTL -1): a counter that never expires refuses that key for ever;
* at the end too, a window passes; a fresh client's remaining() (if the limiter has one) must say
  the whole limit, and its hit(1) must be admitted (no-false-refusal).

A hit that lost a reply and raised, or whose client crashed, has an unknown outcome: it is never
counted as admitted, and it counts against a refusal (twice, if its command may have been resent).
"""

from __future__ import annotations

from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.impl.catalog import (
    BUCKET_HINT,
    CLOCK_SKEW_SAFE,
    FIXED_WINDOW,
    NO_FALSE_REFUSAL,
    NO_STUCK_KEY,
    OVER_ADMISSION_PROPERTIES,
    TOKEN_BUCKET,
)
from contend.machines.base import ScheduledMachine
from contend.models.rate_limiter import Hit, Limits, over_admitted, refusal_rule, refused_with_room
from contend.schedule.client import Status
from contend.servers.target import Target

#: The limiter the machine builds: small, so a few clients race for its last unit.
LIMIT = 2
WINDOW_MS = 1_000
#: What a hit costs (mostly 1).
COSTS = (1, 1, 1, 2)
#: Shares of the window `wait` lets pass (past 1: every window so far has ended).
WAITS = (0.3, 0.6, 1.1)
#: How far `skew_clock` moves a client's wall clock, in windows.
SKEWS = (0.5, 1.0)
#: Rounding a correct limiter may do, in seconds (whole milliseconds; the 1 ms a step costs).
SLACK = 0.003


class RateLimiterMachine(ScheduledMachine):
    """Subclass per implementation with `factory` and `claims` set. Clients 0..workers-1 hit;
    client `probe` makes the last hit."""

    factory: Any = None
    claims: frozenset[str] = frozenset()
    workers = 3
    clients = 4
    essential_rules = frozenset({"hit", "advance"})
    anchor = ("limiter",)
    judged_on_kept_time = "windows running out (waits, stalls, no-false-refusal)"
    situations: ClassVar[dict[str, str]] = {
        **dict.fromkeys(sorted(OVER_ADMISSION_PROPERTIES), "a hit admitted while another hit was under way"),
        CLOCK_SKEW_SAFE: "a hit that returned while a client's wall clock was skewed (by a limiter that reads one)",
        NO_STUCK_KEY: "a hit cut off by a crash or a lost reply",
    }

    def __init__(self, target: Target, **kwargs: Any) -> None:
        self.limiters: dict[int, Any] = {}
        self.hits: list[Hit] = []
        self.running: dict[int, tuple[int, float]] = {}  # client -> (cost, began)
        self.skews = 0
        self.last_trip: dict[str, int] = {}
        self.seen = 0
        super().__init__(target, **kwargs)
        self.window = WINDOW_MS / 1000
        self.limits = Limits(LIMIT, self.window, SLACK, origin=-self.scheduler.wall_base)
        self.operation_bound = 10 * self.window

    def setup_clients(self) -> None:
        self.key = self.ns.key(*self.anchor)
        self.probe = self.clients - 1
        for index in range(self.clients):
            self.limiters[index] = type(self).factory(self.connections[index], self.key, LIMIT, WINDOW_MS)

    def reads_wall_clock(self) -> bool:
        """Has the limiter's code read a worker's wall clock (time.time)? Then skew matters to it."""
        return any(c.read_wall_clock for c in self.scheduler.clients[: self.workers])

    def idle_workers(self) -> list[int]:
        return [i for i in range(self.workers) if self.scheduler.clients[i].status is Status.IDLE]

    # Rules -------------------------------------------------------------------------------
    @precondition(lambda self: bool(self.idle_workers()))
    @rule(client=st.integers(0, 2), cost=st.sampled_from(COSTS))
    def hit(self, client: int, cost: int) -> None:
        """A worker hits the key."""
        idle = self.idle_workers()
        index = idle[client % len(idle)]
        limiter = self.limiters[index]
        self.running[index] = (cost, self.scheduler.vclock)
        self.start(index, lambda: limiter.hit(cost), f"hit({cost})" if cost != 1 else "hit()")

    @precondition(lambda self: bool(self.scheduler.runnable()))
    @rule(data=st.data(), steps=st.integers(1, 4), stall=st.sampled_from([False] * 5 + [True]))
    def advance(self, data: st.DataObject, steps: int, stall: bool) -> None:
        """Round trips as the base machine makes them; then, with `stall`, every client pauses for
        0.6 of a window wherever it is in its hit."""
        super().advance(data, steps)
        if stall and self.server_keeps_time and self.busy_clients():
            seconds = 0.6 * self.window
            self.scheduler.advance(seconds, note=f"{seconds:g} s pass (a stall between round trips)")

    @precondition(lambda self: self.server_keeps_time and not self.busy_clients())
    @rule(share=st.sampled_from(WAITS))
    def wait(self, share: float) -> None:
        """A share of the window passes between hits (time passing in the middle of one is
        `advance`'s stall)."""
        seconds = share * self.window
        self.scheduler.advance(seconds, note=f"{seconds:g} s pass")

    @precondition(lambda self: self.skews < 2 and self.reads_wall_clock())
    @rule(client=st.integers(0, 2), share=st.sampled_from(SKEWS), ahead=st.booleans())
    def skew_clock(self, client: int, share: float, ahead: bool) -> None:
        """One worker's wall clock jumps by half a window or a whole one (only once the limiter's
        code has read a wall clock)."""
        self.scheduler.skew(client, (1 if ahead else -1) * share * self.window)
        self.skews += 1

    def first_choice(self, ready: list[int]) -> int | None:
        """Hits under way take turns, the one whose last round trip is oldest first (two clients
        read the same count before either writes); any order stays possible."""
        for step in self.scheduler.trace[self.seen :]:
            if step.sent:
                self.last_trip[step.client] = step.index
        self.seen = len(self.scheduler.trace)
        names = self.scheduler.clients
        hitting = [i for i in ready if i in self.running]
        if len(hitting) > 1:
            return min(hitting, key=lambda i: self.last_trip.get(names[i].name, -1))
        return self.current

    # Judgements --------------------------------------------------------------------------
    def _under_way(self) -> list[Hit]:
        """Hits in flight, as unknown ones that have not ended."""
        return [
            Hit(-1 - i, self.scheduler.clients[i].name, cost, began, float("inf"), None, self._weight())
            for i, (cost, began) in self.running.items()
        ]

    def _weight(self) -> int:
        return 1 + max(0, self.target.client_retries)

    def crashed(self, index: int) -> None:
        self.met[NO_STUCK_KEY] += 1
        cost, began = self.running.pop(index, (1, self.scheduler.vclock))
        name = self.scheduler.clients[index].name
        self.hits.append(
            Hit(len(self.hits) + 1, name, cost, began, self.scheduler.vclock, None, self._weight())
        )

    def completed(self, index: int) -> None:
        if index not in self.running:
            return  # not a hit (the probe's remaining())
        cost, began = self.running.pop(index)
        outcome = self.scheduler.clients[index].outcome
        name = self.scheduler.clients[index].name
        lost = index in self.lost_reply_in
        weight = self._weight() if lost else 1
        now = self.scheduler.vclock
        if outcome.error is not None:
            error = "" if lost else type(outcome.error).__name__
            hit = Hit(len(self.hits) + 1, name, cost, began, now, None, weight, error)
        else:
            hit = Hit(len(self.hits) + 1, name, cost, began, now, bool(outcome.value), weight)
        self.hits.append(hit)
        if lost:
            self.met[NO_STUCK_KEY] += 1
        if self._skewed() or not self.reads_wall_clock():
            self.met[CLOCK_SKEW_SAFE] += 1  # skewed, or no skew can matter to it (it reads no wall clock)
        if hit.outcome is True and self.running:
            for prop in OVER_ADMISSION_PROPERTIES:
                self.met[prop] += 1
        if hit.outcome is True:
            self.judge_admitted(hit)
        elif hit.outcome is False or hit.error:
            self.judge_refused(hit)

    def _skewed(self) -> str:
        skewed = [f"{c.name} {c.skew:+g} s" for c in self.scheduler.clients if c.skew]
        if skewed:
            return ", ".join(skewed)
        return f"{self.skews} jump(s), since undone" if self.skews else ""

    def judge_admitted(self, hit: Hit) -> None:
        every = [*self.hits, *self._under_way()]
        for prop in sorted(OVER_ADMISSION_PROPERTIES & self.claims):
            evidence = over_admitted(every, self.limits, prop, new=hit)
            if evidence is None:
                continue
            if prop == FIXED_WINDOW and TOKEN_BUCKET not in self.claims:
                evidence += BUCKET_HINT
            skewed = self._skewed()
            if skewed:
                if CLOCK_SKEW_SAFE not in self.claims:
                    return  # it does not claim to stand skewed clocks
                self.fail(CLOCK_SKEW_SAFE, f"{evidence} (clocks skewed: {skewed}; over-admission by {prop})")
            self.fail(prop, evidence)

    def judge_refused(self, hit: Hit) -> None:
        if NO_FALSE_REFUSAL not in self.claims or not self.server_keeps_time:
            return
        rule = refusal_rule(self.claims)
        evidence = refused_with_room(hit, [*self.hits, *self._under_way()], self.limits, rule)
        if evidence is None:
            return
        skewed = self._skewed()
        if skewed:
            if CLOCK_SKEW_SAFE not in self.claims:
                return
            self.fail(CLOCK_SKEW_SAFE, f"{evidence} (clocks skewed: {skewed})")
        self.fail(NO_FALSE_REFUSAL, evidence)

    # The end ------------------------------------------------------------------------------
    def check_quiescent(self) -> None:
        """Run every hit to its end; no key left without an expiry; after a window, a fresh
        client's hit is admitted."""
        self.finish_all()
        if NO_STUCK_KEY in self.claims:
            self.check_stuck_keys()
        if NO_FALSE_REFUSAL not in self.claims or not self.server_keeps_time:
            return
        seconds = self.window + 2 * SLACK
        self.scheduler.advance(seconds, note=f"{seconds:g} s pass (a whole window, nobody hitting)")
        limiter = self.limiters[self.probe]
        if callable(getattr(limiter, "remaining", None)):
            # After a whole quiet window every algorithm has all of `limit` back.
            outcome = self.run_alone(self.probe, limiter.remaining, "remaining() (after a quiet window)")
            left = outcome.value
            if outcome.error is None and isinstance(left, int) and left < LIMIT:
                self.fail(
                    NO_FALSE_REFUSAL,
                    f"remaining() said {left} after a whole {self.window:g} s window with no hit (limit {LIMIT})",
                )
        self.running[self.probe] = (1, self.scheduler.vclock)
        self.run_alone(self.probe, lambda: limiter.hit(1), "hit() (after a quiet window)")

    def check_stuck_keys(self) -> None:
        """no-stuck-key: every key of the limiter's has an expiry."""
        stuck = [
            f"{_text(key)} ({_text(client.type(key))}, {where})"
            for where, client, key in self.ns.without_expiry()
        ]
        if stuck:
            crashed = [c.name for c in self.scheduler.clients if c.status is Status.CRASHED]
            lost = [s.index for s in self.scheduler.trace if s.lost]
            why = []
            if crashed:
                why.append(f"{', '.join(crashed)} crashed mid-hit")
            if lost:
                why.append(f"replies of round trip(s) {', '.join(map(str, lost))} were lost")
            self.fail(
                NO_STUCK_KEY,
                f"after every hit ended, {', '.join(stuck)} had no expiry: a counter that never expires "
                f"refuses that key for ever{' (' + '; '.join(why) + ')' if why else ''}",
            )


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def machine_for(impl: Any) -> type[RateLimiterMachine]:
    """A RateLimiterMachine subclass for a catalog entry (or anything with factory, claims, name)."""
    return type(
        f"RateLimiterMachine_{''.join(c if c.isalnum() else '_' for c in impl.name)}",
        (RateLimiterMachine,),
        {"factory": staticmethod(impl.factory), "claims": frozenset(impl.claims)},
    )
