"""The battery `contend check` runs: per family, a list of named checks.

A check gets a `CheckContext` (the target server, a fresh namespace, the
subject with its claims and capabilities, the options) and returns one line of
detail, raises `CheckFailed` naming the property the implementation broke, or
`CheckInconclusive` when it could not decide. Each check runs in a thread of
its own with a real-time budget: past it the check is abandoned (its clients
are closed, which ends any wait on Redis) and reported inconclusive with the
last thing it noted, and the battery goes on.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

import redis

from contend.errors import Abandoned, ContendError
from contend.impl.catalog import CLUSTER_SLOTS, PROPERTY_KINDS
from contend.servers.cluster_client import disconnect
from contend.servers.keyspace import Namespace
from contend.servers.slot_refusals import SlotRefusal, refusals_count, refusals_since
from contend.servers.tap import ForeignServer, RoundTrips, foreign_round_trip, tap
from contend.servers.target import Target

PASS, FAIL, INCONCLUSIVE = "pass", "fail", "inconclusive"
#: How much longer the leases of the real-time checks are for a lock over several masters.
MASTERS_SCALE = 5


class CheckFailed(AssertionError):
    """The implementation broke a property: the message is the evidence, `property` its name
    (None: the property the check is about)."""

    def __init__(self, message: str, *, prop: str | None = None, facts: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.property = prop
        self.facts = facts or {}


class InputRefused(ContendError):
    """Bad input that only a check could see (a `--replay` blob that replays no example): the
    run ends as for any bad input, one line and exit 2, and nothing is judged."""


class CheckInconclusive(Exception):
    """The check could not decide (the machine stalled past a lease, the implementation blocked
    on something the scheduler cannot see); the message says why."""


@dataclass
class CheckOptions:
    """Sizes, seed and budgets of the battery."""

    seed: int = 0
    model_ops: int = 300
    serial_names: int = 2_000
    burst_clients: int = 16
    burst_rounds: int = 20
    burst_names_per_client: int = 50
    schedule_examples: int = 60  # state-machine examples for a correct implementation
    hunt_examples: int = 2000  # the most a known-bad one is searched before it counts as missed
    shrink: bool = True  # shrink a schedule failure to its minimal interleaving
    #: seconds Hypothesis may spend shrinking a schedule failure; then the smallest found so far
    shrink_seconds: float = 8.0
    check_seconds: float = 60.0  # real-time budget of one check
    run_seconds: float | None = None  # real-time budget of the whole run (None: no limit)
    replay: str | None = None  # a schedule failure to replay (`contend check --replay`)


@dataclass
class CheckContext:
    """What a check gets to work with."""

    target: Target
    namespace: Namespace
    factory: Callable[..., Any]
    options: CheckOptions
    dbs: tuple[int, ...] = ()
    subject: Any = None  # the row being checked (name, family, claims, capabilities, known_bad)
    abandoned: threading.Event = field(default_factory=threading.Event)
    last_note: str = ""
    #: time.monotonic() by which the check should wrap up (its budget ends a little later)
    wrap_up_by: float | None = None
    #: Properties the check judges only in a situation that never arose, with the situation in
    #: words: a pass says they were not exercised.
    not_exercised: dict[str, str] = field(default_factory=dict)
    _clients: list[redis.Redis] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def client(self) -> redis.Redis:
        """A new connected client, closed when the check ends."""
        self.check_abandoned()
        client = self.target.client()
        with self._lock:
            self._clients.append(client)
        client.ping()
        return client

    def tapped_client(self) -> tuple[redis.Redis, RoundTrips]:
        """A new connected client (closed when the check ends) whose round trips from now on are
        counted, and can be crashed or paused (`contend.servers.tap`)."""
        self.check_abandoned()
        client = self.target.client()
        with self._lock:
            self._clients.append(client)
        trips = tap(client)  # before the first connection is made, so that every one is tapped
        client.ping()
        trips.sent = 0
        return client, trips

    def ttl(self, ms: int) -> int:
        """A lease of `ms` milliseconds, rounded up to what the implementation can hold (a library
        that takes whole seconds declares `ttl_resolution_ms = 1000` on its factory); MASTERS_SCALE
        times as long for a lock over several masters, whose acquire is a round trip per master and
        whose validity is the lease minus their time (short leases would run out on a busy machine):
        a row that spans them (`--masters`), or one whose target does (a scoreboard row over
        several masters, whose adapter builds the lock over the target's `also`)."""
        step = getattr(getattr(self.subject, "capabilities", None), "ttl_resolution_ms", 1) or 1
        if getattr(self.subject, "masters", 0) or self.target.masters:
            ms *= MASTERS_SCALE
        return -(-ms // step) * step

    def note(self, text: str) -> None:
        """Say what the check is doing now: reported if its budget runs out."""
        self.last_note = text
        self.check_abandoned()

    def check_abandoned(self) -> None:
        """Abandoned if the check's budget ran out or the run is being interrupted."""
        if self.abandoned.is_set():
            raise Abandoned(self.last_note)

    def abandon(self) -> None:
        """Stop the check: flag it, and close its clients so a wait on Redis ends now."""
        self.abandoned.set()
        self.close()

    def close(self) -> None:
        with self._lock:
            clients, self._clients = list(self._clients), []
        for client in clients:
            with contextlib.suppress(Exception):
                disconnect(client)
            with contextlib.suppress(Exception):
                client.close()


@dataclass(frozen=True)
class Check:
    """A named check. It runs for a subject that claims `needs` (if set) and has `capability`
    (if set: "clock", "extend", "fencing" or "register_many"); `prop` is the property a failure breaks."""

    name: str
    description: str
    run: Callable[[CheckContext], str]  # returns a one-line detail on success
    prop: str = ""
    needs: str = ""
    capability: str = ""
    #: Whether the check ends by itself at a refusal because of hash slots on a Redis Cluster
    #: (the state machine, with the interleaving that led to it); others are stopped there.
    judges_slot_refusals: bool = False

    def applies(self, subject: Any) -> bool:
        """Should this check run for `subject` (anything with claims and capabilities)?"""
        if self.needs and self.needs not in subject.claims:
            return False
        if self.capability:
            return bool(getattr(subject.capabilities, self.capability, False))
        return True


#: How a passing check's detail begins what it could not judge (the report prints that part).
NOT_JUDGED = "not judged on a server contend did not start"


@dataclass(frozen=True)
class CheckResult:
    check: str
    status: str  # PASS, FAIL or INCONCLUSIVE
    detail: str
    seconds: float
    prop: str = ""  # the property a failure broke
    #: About a failure, where known: seconds_to_first (counterexample found after), clients and
    #: round_trips (of the shrunk one), replay (the command)
    facts: dict[str, Any] = field(default_factory=dict)
    #: Of a pass: properties whose situation never arose (property -> the situation, in words).
    not_exercised: dict[str, str] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == PASS

    @property
    def failed(self) -> bool:
        return self.status == FAIL

    @property
    def kind(self) -> str:
        """safety, liveness or hygiene for a failure; '' otherwise."""
        return PROPERTY_KINDS.get(self.prop, "safety") if self.failed else ""


def run_check(
    check: Check, ctx: CheckContext, stop: threading.Event | None = None, budget: float | None = None
) -> CheckResult:
    """Run one check in a thread of its own, within its real-time budget.

    An exception from the implementation counts as a failure of the check's property. Past
    the budget (`options.check_seconds`, or `budget` when less: what is left of the run's),
    or once `stop` is set (the run is interrupted), the check is abandoned and reported
    inconclusive with what it last noted.
    """
    start = time.perf_counter()
    box: dict[str, Any] = {}
    mark = refusals_count()

    def body() -> None:
        try:
            box["detail"] = check.run(ctx)
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=body, name=f"contend-check-{check.name}", daemon=True)
    thread.start()
    seconds = ctx.options.check_seconds if budget is None else min(budget, ctx.options.check_seconds)
    deadline = start + seconds
    ctx.wrap_up_by = time.monotonic() + 0.75 * seconds
    try:
        while thread.is_alive() and time.perf_counter() < deadline and not (stop and stop.is_set()):
            thread.join(0.05)
            if foreign_round_trip() is not None:
                break
            if not check.judges_slot_refusals and refusals_count() > mark:
                break  # on a Redis Cluster: the refusal is the finding, whatever follows from it
    except BaseException:  # interrupted: stop the check before the run goes down
        ctx.abandon()
        thread.join(1.0)
        raise
    if (foreign := foreign_round_trip()) is not None:
        # Round trips to a server outside the run: whatever the check found, it cannot be judged.
        ctx.abandon()
        thread.join(2.0)
        raise ForeignServer(str(foreign))
    if thread.is_alive():
        interrupted = stop is not None and stop.is_set()
        ctx.abandon()
        thread.join(2.0)
        if interrupted or not refusals_since(mark):
            why = (
                "the run was interrupted"
                if interrupted
                else f"timed out after {ctx.options.check_seconds:g} s"
            )
            seen = f"; it was at: {ctx.last_note}" if ctx.last_note else ""
            return CheckResult(
                check.name, INCONCLUSIVE, f"inconclusive ({why}){seen}", time.perf_counter() - start
            )
        box.pop("error", None)  # stopped at the refusal: what the stop raised in it says nothing
    else:
        ctx.close()
    result = _result(check, box, time.perf_counter() - start, refusals_since(mark))
    if result.passed and ctx.not_exercised:
        return replace(result, not_exercised=dict(ctx.not_exercised))
    return result


def _result(check: Check, box: dict[str, Any], seconds: float, refused: list[SlotRefusal]) -> CheckResult:
    """The check's result, from what its thread left in `box` (its summary, or the exception
    that ended it) and the Redis Cluster refusals met meanwhile (`refused`)."""
    error = box.get("error")
    if refused and not isinstance(error, Abandoned):
        # On a Redis Cluster, whatever the implementation made of the refusal (a refused acquire,
        # an error it caught, a hang), its command spans slots: that is the finding, and the only one.
        more = f" ({len(refused)} such refusals in this check)" if len(refused) > 1 else ""
        facts: dict[str, Any] = {"refusal": _refusal_facts(refused[0])}
        if isinstance(error, CheckFailed) and error.property == CLUSTER_SLOTS:  # the machine's, traced
            facts = {"seconds_to_first": round(seconds, 3), **error.facts, **facts}
            return CheckResult(check.name, FAIL, str(error), seconds, CLUSTER_SLOTS, facts)
        return CheckResult(check.name, FAIL, f"{refused[0]}{more}", seconds, CLUSTER_SLOTS, facts)
    if error is None:
        return CheckResult(check.name, PASS, str(box.get("detail", "")), seconds)
    if isinstance(error, CheckFailed):
        facts = {"seconds_to_first": round(seconds, 3), **error.facts}
        return CheckResult(check.name, FAIL, str(error), seconds, error.property or check.prop, facts)
    if isinstance(error, CheckInconclusive):
        return CheckResult(check.name, INCONCLUSIVE, f"inconclusive ({error})", seconds)
    if isinstance(error, Abandoned):
        return CheckResult(check.name, INCONCLUSIVE, "inconclusive (abandoned)", seconds)
    if not isinstance(error, Exception) or isinstance(error, InputRefused):
        raise error  # KeyboardInterrupt, SystemExit in the check's thread; bad input
    return CheckResult(check.name, FAIL, f"raised {type(error).__name__}: {error}", seconds, check.prop)


def _refusal_facts(refusal: SlotRefusal) -> dict[str, Any]:
    """A refusal because of slots as JSON: what was refused, by whom, each key's slot and node."""
    line = refusal.line
    return {
        "command": refusal.command,
        "shape": refusal.shape,
        "refused_by": refusal.refused_by,
        "error": refusal.error or None,
        "keys": [k._asdict() for k in refusal.keys],
        "undeclared": [k._asdict() for k in refusal.undeclared],
        "script_line": {"number": line.number, "text": line.text} if line else None,
    }


@contextlib.contextmanager
def expect(what: str, prop: str | None = None) -> Iterator[None]:
    """Turn an implementation's exception into a CheckFailed naming `what` was being done."""
    try:
        yield
    except (CheckFailed, CheckInconclusive, Abandoned):
        raise
    except Exception as exc:
        raise CheckFailed(f"{what}: raised {type(exc).__name__}: {exc}", prop=prop) from exc


def expect_rejected(ctx: CheckContext, what: str, call: Callable[..., object], *args: Any) -> str:
    """`call(*args)` must raise (any exception: the protocol names none) and leave the namespace
    empty; else CheckFailed naming `what`. Returns the exception's type name."""
    try:
        call(*args)
    except (CheckFailed, CheckInconclusive, Abandoned):
        raise
    except Exception as exc:
        if (written := ctx.namespace.count()) != 0:
            raise CheckFailed(f"{what} raised {type(exc).__name__} but wrote {written} key(s) first") from exc
        return type(exc).__name__
    raise CheckFailed(f"{what} was accepted; the protocol says it must raise before writing anything")
