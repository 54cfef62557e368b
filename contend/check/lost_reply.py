"""Lost replies: the server runs a round trip, then the connection drops (or the client times
out) before its reply arrives. The client sees a ConnectionError or TimeoutError; the server
has the effect. Through the round-trip tap (`contend.servers.tap`), for each round trip in turn
of an uncontended operation:

* lock and semaphore: acquire on a free lock, acquire while the lock is full, release, and
  extend (if it has one) lose that round trip's reply. Whatever each returns or raises is
  allowed (a lost reply makes it indeterminate, as Jepsen's `info`), but a grant must be true:
  an acquire that reports success while others fill the lock is mutual exclusion broken, and
  one that reports success must keep a third client out. Whatever lease a lost reply left
  behind must end: another client gets the lock within a few TTLs (crash liveness). And a
  release loses each round trip's reply while another client waits: the waiter takes the place
  the server freed in that moment, and whatever the code then does about the lost reply (a
  resend, a fallback DEL) must leave the waiter's lease as it was (safe release; for a
  semaphore, mutual exclusion), the evidence naming what the code sent next.
* lock, the `reacquire` check: once a release that lost a reply has freed the lock and another
  client taken it, the releasing client's next acquire (same object) must be refused: a lock
  that still believes it holds grants a second holder.
* registry: register(name) loses that round trip's reply; then another client registers the
  same name and a second one. The name keeps one id, and the ids are 1..n with tables that
  agree: a resend that ran the registration twice (the client's retry settings, or the code's
  own retry) shows as a gap or a second id.
* single-flight: a call loses that round trip's reply; another caller must then still get the
  value, and the function must have run once per flight.
* transaction: transfer('a', 'b', 30) loses that round trip's reply; then another client moves
  money back. The balances must be the opening ones plus that transfer once or not at all (a
  resend that moved it twice shows), plus the second transfer once.

The clients are the target's (`contend check --client-retries N` gives them redis-py's Retry, as
`redis.Redis(host=...)` has by default); the evidence says when a round trip was sent again.
The tap wraps redis-py's synchronous connection only: async code loses its replies on the
scheduler instead (contend.check.async_lost_reply).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import threading
import time
from collections.abc import Callable
from typing import Any

import redis

from contend.check.faults import FAULT_TTL, at_once, first_raised, key_state, own_clients, tapped_client
from contend.check.framework import Check, CheckContext, CheckFailed, expect
from contend.check.transactions import ACCOUNTS, OPENING
from contend.impl.catalog import (
    APPLIES_ONCE,
    CRASH_LIVENESS,
    GAP_FREE,
    MUTUAL_EXCLUSION,
    NO_SPURIOUS_ERRORS,
    PROGRESS,
    RUNS_ONCE,
    SAFE_RELEASE,
    SHARED_RESULT,
    STABLE_IDS,
    TABLES_AGREE,
)
from contend.models.bank import explain_final
from contend.servers.tap import HANDSHAKE, RoundTrips
from contend.subject.protocols import granted

#: Round trips an uncontended operation may take before the check stops counting.
MAX_ROUND_TRIPS = 12
#: The lease of the lost release's scenario: nothing in it waits for a lease to end, and the
#: waiter's must surely still run when the third client tries (this check runs in real time).
WAITED_TTL = 20_000


def lost(k: int, steps: int) -> Exception:
    """The error round trip `k` of `steps` raises when its reply is lost: a dropped connection,
    or (every other one) a client-side timeout, as redis-py words them."""
    if k % 2:
        return redis.ConnectionError(f"Connection closed by server. (contend: reply {k} of {steps} lost)")
    return redis.TimeoutError(f"Timeout reading from socket (contend: reply {k} of {steps} lost)")


def resent(trips: RoundTrips) -> str:
    """What the evidence says when a lost round trip was sent again."""
    if not trips.resent:
        return ""
    return (
        f"; the lost round trip was sent again ({trips.resent}×, by the client's retry settings or "
        "the code's own retry): the server ran it twice"
    )


def count_round_trips(
    ctx: CheckContext, extra: list[redis.Redis], run: Callable[[Any], Any], make: Callable[[Any], Any]
) -> int:
    """Round trips `run(obj)` makes on a fresh object (twice: the first may load scripts)."""
    client, trips = tapped_client(ctx, extra)
    counted = 0
    for _ in range(2):
        obj = make(client)
        trips.sent = 0
        with contextlib.suppress(Exception):
            run(obj)
        counted = trips.sent
    return max(1, min(counted, MAX_ROUND_TRIPS))


# --- locks and semaphores -------------------------------------------------------------------------


def _limit(ctx: CheckContext) -> int:
    return 2 if ctx.subject is not None and ctx.subject.family == "semaphore" else 1


def _lock(ctx: CheckContext, client: redis.Redis, key: str, ttl: int) -> Any:
    limit = _limit(ctx)
    return ctx.factory(client, key, ttl, limit=limit) if limit > 1 else ctx.factory(client, key, ttl)


def _holding(ctx: CheckContext, key: Callable[[], str], ttl: int) -> Callable[[redis.Redis], Any]:
    """What count_round_trips makes a release or extend on: a lock on a fresh key (`key()`), held."""

    def held(client: redis.Redis) -> Any:
        lock = _lock(ctx, client, key(), ttl)
        lock.acquire(blocking=False)
        return lock

    return held


def _free_within(ctx: CheckContext, key: str, ttl: int, bound: float, what: str) -> None:
    """crash liveness: another client gets the lock within `bound` seconds (judged only for a lock
    that claims it: one without a lease may stay held by a client that died)."""
    if ctx.subject is not None and CRASH_LIVENESS not in ctx.subject.claims:
        return
    waiter = _lock(ctx, ctx.client(), key, ttl)
    start = time.monotonic()
    with expect(f"{what}: another client's acquire", prop=CRASH_LIVENESS):
        got = granted(waiter.acquire(blocking=True, timeout=bound))
    if not got:
        raise CheckFailed(
            f"{what}; another client then waited {time.monotonic() - start:.1f} s "
            f"({bound / (ttl / 1000):.1f} TTLs) in vain; left behind: {key_state(ctx.namespace.client, key)}",
            prop=CRASH_LIVENESS,
        )
    with contextlib.suppress(Exception):
        waiter.release()


def _keeps_out(
    ctx: CheckContext,
    key: str,
    ttl: int,
    what: str,
    since: float,
    prop: str = MUTUAL_EXCLUSION,
    finding: str = "the grant was not true",
) -> None:
    """mutual exclusion (or `prop`): with the lock full, a third client's try-acquire is refused,
    as long as the grant's lease (taken at `since` at the earliest) is surely still running."""
    probe = _lock(ctx, ctx.client(), key, ttl)
    try:
        got = granted(probe.acquire(blocking=False))
    except Exception:
        got = False
    if got and time.monotonic() - since >= 0.8 * ttl / 1000:
        with contextlib.suppress(Exception):
            probe.release()
        return  # the machine was too slow to tell: the lease may have run out on its own
    if got:
        with contextlib.suppress(Exception):
            probe.release()
        raise CheckFailed(
            f"{what}, yet a third client acquired at once: {finding} "
            f"(left behind: {key_state(ctx.namespace.client, key)})",
            prop=prop,
        )


def lock_check(ctx: CheckContext) -> str:
    """Each round trip of acquire (free, and while full), release and extend loses its reply."""
    ttl = ctx.ttl(FAULT_TTL)
    bound = ttl * 3 / 1000 + 0.5
    limit = _limit(ctx)
    extendable = bool(
        ctx.subject is not None and ctx.subject.capabilities and ctx.subject.capabilities.extend
    )
    with own_clients() as extra:
        counter = itertools.count()

        def key(what: str) -> str:
            return ctx.namespace.key("lost", what, next(counter))

        acquiring = count_round_trips(
            ctx, extra, lambda lock: lock.acquire(blocking=False), lambda c: _lock(ctx, c, key("n"), ttl)
        )
        held = _holding(ctx, lambda: key("n"), ttl)
        releasing = count_round_trips(ctx, extra, lambda lock: lock.release(), held)
        extending = count_round_trips(ctx, extra, lambda lock: lock.extend(ttl), held) if extendable else 0
        cases: list[Callable[[], int]] = []  # each on a key of its own: all run at once
        for k in range(1, acquiring + 1):
            cases.append(functools.partial(_acquire_free, ctx, extra, key("free"), k, acquiring, ttl, bound))
            cases.append(
                functools.partial(_acquire_full, ctx, extra, key("full"), k, acquiring, ttl, bound, limit)
            )
        for k in range(1, releasing + 1):
            cases.append(functools.partial(_release, ctx, extra, key("release"), k, releasing, ttl, bound))
            cases.append(
                functools.partial(
                    _release_while_waited, ctx, extra, key("waited"), k, releasing, ctx.ttl(WAITED_TTL)
                )
            )
        for k in range(1, extending + 1):
            cases.append(functools.partial(_extend, ctx, extra, key("extend"), k, extending, ttl, bound))
        returned, raised = at_once(dict(enumerate(cases)))
    first_raised(raised)  # the first case in the order above that failed
    tried = sum(returned.values())
    parts = f"acquire {acquiring}, release {releasing}" + (f", extend {extending}" if extendable else "")
    return f"{tried} lost replies ({parts} round trip(s)): every grant true, the lock free again within a few TTLs"


def _acquire_free(
    ctx: CheckContext, extra: list[redis.Redis], key: str, k: int, steps: int, ttl: int, bound: float
) -> int:
    client, trips = tapped_client(ctx, extra)
    lock = _lock(ctx, client, key, ttl)
    trips.lose_after(k - 1, lost(k, steps))
    ctx.note(f"lost reply: round trip {k} of {steps} of an acquire of a free lock")
    since = time.monotonic()
    try:
        got = granted(lock.acquire(blocking=False))
    except Exception:
        got = False
    what = f"the reply to round trip {k} of an acquire of a free lock was lost{resent(trips)}"
    if not trips.lost:
        return 0  # fewer round trips this time
    if got and _limit(ctx) == 1:
        _keeps_out(ctx, key, ttl, f"{what}; the acquire reported success", since)
        with contextlib.suppress(Exception):
            lock.release()
    trips.crash_after(0)  # then its process dies: nothing of it (a lease renewer) runs on
    _free_within(
        ctx, key, ttl, bound, what + ("; it reported success and released" if got else "") + "; then it died"
    )
    return 1


def _acquire_full(
    ctx: CheckContext,
    extra: list[redis.Redis],
    key: str,
    k: int,
    steps: int,
    ttl: int,
    bound: float,
    limit: int,
) -> int:
    holders = []
    since = time.monotonic()
    for _ in range(limit):
        holder = _lock(ctx, ctx.client(), key, ttl)
        with expect("an uncontended acquire", prop=PROGRESS):
            if not granted(holder.acquire(blocking=False)):
                raise CheckFailed("a lock with room could not be acquired", prop=PROGRESS)
        holders.append(holder)
    client, trips = tapped_client(ctx, extra)
    lock = _lock(ctx, client, key, ttl)
    trips.lose_after(k - 1, lost(k, steps))
    ctx.note(f"lost reply: round trip {k} of {steps} of an acquire while the lock is full")
    try:
        got = granted(lock.acquire(blocking=False))
    except Exception:
        got = False
    if not trips.lost:
        return 0
    if got and time.monotonic() - since >= 0.8 * ttl / 1000:
        return 0  # the machine was too slow to tell: the holders' leases may have run out on their own
    trips.crash_after(0)
    if got:
        raise CheckFailed(
            f"the reply to round trip {k} of {steps} of an acquire was lost while {limit} client(s) held "
            f"the lock, and the acquire reported success anyway{resent(trips)} "
            f"(left behind: {key_state(ctx.namespace.client, key)})",
            prop=MUTUAL_EXCLUSION,
        )
    for holder in holders:
        with contextlib.suppress(Exception):
            holder.release()
    _free_within(ctx, key, ttl, bound, f"the reply to round trip {k} of an acquire of a full lock was lost")
    return 1


def _tapped_holder(ctx: CheckContext, extra: list[redis.Redis], key: str, ttl: int) -> tuple[Any, RoundTrips]:
    """A lock on a tapped client of its own, acquired (free, so it must be: else progress)."""
    client, trips = tapped_client(ctx, extra)
    lock = _lock(ctx, client, key, ttl)
    with expect("an uncontended acquire", prop=PROGRESS):
        if not granted(lock.acquire(blocking=False)):
            raise CheckFailed("a free lock could not be acquired", prop=PROGRESS)
    return lock, trips


def _release(
    ctx: CheckContext, extra: list[redis.Redis], key: str, k: int, steps: int, ttl: int, bound: float
) -> int:
    lock, trips = _tapped_holder(ctx, extra, key, ttl)
    trips.lose_after(k - 1, lost(k, steps))
    ctx.note(f"lost reply: round trip {k} of {steps} of a release")
    with contextlib.suppress(Exception):
        lock.release()
    if not trips.lost:
        return 0
    _free_within(
        ctx, key, ttl, bound, f"the reply to round trip {k} of {steps} of a release was lost{resent(trips)}"
    )
    return 1


def _release_while_waited(
    ctx: CheckContext, extra: list[redis.Redis], key: str, k: int, steps: int, ttl: int
) -> int:
    """A release loses round trip `k`'s reply while another client waits: the moment the server
    has run it, the waiter tries the lock (and takes the place it freed); then the releasing code
    goes on with whatever it does about the lost reply (raise, resend, fall back to something
    else). The waiter's lease must be as it was: a third client cannot get in while the lock
    is full (safe release; for a semaphore, mutual exclusion)."""
    limit = _limit(ctx)
    claims: frozenset[str] = getattr(ctx.subject, "claims", frozenset())
    prop = SAFE_RELEASE if limit == 1 else MUTUAL_EXCLUSION
    if prop not in claims:
        return 0
    client, trips = tapped_client(ctx, extra)
    lock = _lock(ctx, client, key, ttl)
    others = [_lock(ctx, ctx.client(), key, ttl) for _ in range(limit - 1)]
    with expect("an uncontended acquire", prop=PROGRESS):
        if not granted(lock.acquire(blocking=False)) or not all(
            granted(o.acquire(blocking=False)) for o in others
        ):
            raise CheckFailed("a lock with room could not be acquired", prop=PROGRESS)
    waiter = _lock(ctx, ctx.client(), key, ttl)
    took: list[float] = []

    def waiter_tries() -> None:
        with contextlib.suppress(Exception):
            if granted(waiter.acquire(blocking=False)):
                took.append(time.monotonic())

    trips.commands = []
    trips.on_lost = waiter_tries
    trips.lose_after(k - 1, lost(k, steps))
    ctx.note(f"lost reply: round trip {k} of {steps} of a release while another client waits")
    with contextlib.suppress(Exception):
        lock.release()
    trips.on_lost = None
    if not trips.lost:
        return 0
    if took:
        then = [
            " ".join(cmd[:2])
            for trip in trips.commands[k:]
            for cmd in trip
            if cmd and str(cmd[0]).upper() not in HANDSHAKE  # a new connection's own
        ]
        answer = f"its code then sent {'; '.join(then)}" if then else "its code sent nothing more"
        _keeps_out(
            ctx,
            key,
            ttl,
            f"the reply to round trip {k} of {steps} of a release was lost while another client waited; the "
            f"waiter took the place it freed at once; {answer}{resent(trips)}; the lock was full again",
            took[0],
            prop=prop,
            finding="the lease the waiter took was freed",
        )
        with contextlib.suppress(Exception):
            waiter.release()
    for other in others:
        with contextlib.suppress(Exception):
            other.release()
    return 1


def reacquire_check(ctx: CheckContext) -> str:
    """Each round trip of a release loses its reply; another client takes the lock if the server
    freed it; the releasing client then acquires again (see _reacquire_after_lost_release)."""
    ttl = ctx.ttl(WAITED_TTL)
    with own_clients() as extra:
        counter = itertools.count()
        held = _holding(ctx, lambda: ctx.namespace.key("again", "n", next(counter)), ttl)
        releasing = count_round_trips(ctx, extra, lambda lock: lock.release(), held)
        cases: dict[int, Callable[[], int]] = {
            k: functools.partial(
                _reacquire_after_lost_release, ctx, extra, ctx.namespace.key("again", k), k, releasing, ttl
            )
            for k in range(1, releasing + 1)
        }
        returned, raised = at_once(cases)
    first_raised(raised)
    judged = sum(returned.values())
    if not judged:
        return f"nothing to judge: none of {releasing} lost release replies left the lock free for another client"
    return (
        f"{judged} of {releasing} lost release replies freed the lock for another client; after each, "
        "the releasing client's next acquire was refused"
    )


def _reacquire_after_lost_release(
    ctx: CheckContext, extra: list[redis.Redis], key: str, k: int, steps: int, ttl: int
) -> int:
    """A release loses round trip `k`'s reply; another client then takes the lock (the server
    freed it); then the releasing client acquires again with the same object. Its lease is gone
    and the other's runs, so that acquire must be refused (mutual exclusion): a lock that
    remembers locally that it holds (a re-entrant count a failed release left set) and grants
    without asking the server makes two holders. Judged only when the other client got in."""
    lock, trips = _tapped_holder(ctx, extra, key, ttl)
    trips.lose_after(k - 1, lost(k, steps))
    ctx.note(f"lost reply: round trip {k} of {steps} of a release, then the same client acquires again")
    raised = ""
    try:
        lock.release()
    except Exception as exc:
        raised = f" (the release raised {type(exc).__name__})"
    if not trips.lost:
        return 0
    other = _lock(ctx, ctx.client(), key, ttl)
    try:
        took = granted(other.acquire(blocking=False))
    except Exception:
        took = False
    since = time.monotonic()
    if not took:
        return 0  # the release did not free the lock on the server: nothing to judge here
    try:
        again = granted(lock.acquire(blocking=False))
    except Exception:
        again = False
    surely_valid = time.monotonic() - since < 0.8 * ttl / 1000
    if again:
        with contextlib.suppress(Exception):
            lock.release()
    with contextlib.suppress(Exception):
        other.release()
    if again and surely_valid:
        raise CheckFailed(
            f"the reply to round trip {k} of {steps} of a release was lost{raised}{resent(trips)}; another "
            "client then acquired the lock the server had freed; the releasing client's next acquire, on "
            "the same lock object, was granted too while the other's lease ran: two holders "
            f"(left behind: {key_state(ctx.namespace.client, key)})",
            prop=MUTUAL_EXCLUSION,
        )
    return 1


def _extend(
    ctx: CheckContext, extra: list[redis.Redis], key: str, k: int, steps: int, ttl: int, bound: float
) -> int:
    lock, trips = _tapped_holder(ctx, extra, key, ttl)
    trips.lose_after(k - 1, lost(k, steps))
    ctx.note(f"lost reply: round trip {k} of {steps} of an extend")
    with contextlib.suppress(Exception):
        lock.extend(ttl)
    if not trips.lost:
        return 0
    trips.crash_after(0)  # the holder dies: nothing of it (a lease renewer) runs on
    what = f"the reply to round trip {k} of {steps} of an extend({ttl}) was lost{resent(trips)} and the holder then died"
    _free_within(ctx, key, ttl, bound + ttl / 1000, what)
    return 1


# --- registries -----------------------------------------------------------------------------------


def registry_check(ctx: CheckContext) -> str:
    """Each round trip of a registration loses its reply; then the same name and a second one are
    registered by another client: one id per name, ids 1..n, tables that agree."""
    with own_clients() as extra:
        made = itertools.count()

        def space() -> str:
            return ctx.namespace.child("lost", str(next(made)))

        steps = count_round_trips(
            ctx, extra, lambda reg: reg.register("a"), lambda c: ctx.factory(c, space())
        )
        for k in range(1, steps + 1):
            _registration(ctx, extra, space(), k, steps)
    return f"the reply to each of {steps} round trip(s) of a registration lost: one id per name, ids 1..n"


def _registration(ctx: CheckContext, extra: list[redis.Redis], prefix: str, k: int, steps: int) -> None:
    client, trips = tapped_client(ctx, extra)
    first = ctx.factory(client, prefix)
    trips.lose_after(k - 1, lost(k, steps))
    ctx.note(f"lost reply: round trip {k} of {steps} of register('a')")
    try:
        got: Any = first.register("a")
    except Exception as exc:
        got = exc
    if not trips.lost:
        return
    what = f"the reply to round trip {k} of {steps} of register('a') was lost{resent(trips)}"
    other = ctx.factory(ctx.client(), prefix)
    with expect(f"{what}; another client's register('a')", prop=NO_SPURIOUS_ERRORS):
        a = other.register("a")
    if not isinstance(got, Exception) and got != a:
        raise CheckFailed(
            f"{what}; it returned {got} anyway, and another client's register('a') then returned {a}",
            prop=STABLE_IDS,
        )
    with expect(f"{what}; another client's register('b')", prop=NO_SPURIOUS_ERRORS):
        b = other.register("b")
    if sorted([a, b]) != [1, 2]:
        raise CheckFailed(f"{what}; then 'a' has id {a} and 'b' has id {b}, not 1 and 2", prop=GAP_FREE)
    with expect(f"{what}; reading the tables back", prop=TABLES_AGREE):
        back = (other.reverse(a), other.reverse(b), other.count())
    if back != ("a", "b", 2):
        raise CheckFailed(
            f"{what}; reverse({a}), reverse({b}) and count() gave {back}, not ('a', 'b', 2)",
            prop=TABLES_AGREE,
        )


# --- single-flight --------------------------------------------------------------------------------


def flight_check(ctx: CheckContext) -> str:
    """Each round trip of a leader's call loses its reply; another caller must get a value, and the
    function runs once per flight."""
    ttl = ctx.ttl(2_000)
    with own_clients() as extra:
        made = itertools.count()

        def key() -> str:
            return ctx.namespace.key("lost-flight", next(made))

        steps = count_round_trips(
            ctx, extra, lambda f: f.call(lambda: 3), lambda c: ctx.factory(c, key(), ttl)
        )
        for k in range(1, steps + 1):
            _flight(ctx, extra, key(), k, steps, ttl)
    return f"the reply to each of {steps} round trip(s) of a call lost: the next caller got a value"


def _flight(ctx: CheckContext, extra: list[redis.Redis], key: str, k: int, steps: int, ttl: int) -> None:
    runs: list[int] = []
    lock = threading.Lock()

    def compute() -> int:
        with lock:
            runs.append(1)
        return 3

    client, trips = tapped_client(ctx, extra)
    leader = ctx.factory(client, key, ttl)
    trips.lose_after(k - 1, lost(k, steps))
    ctx.note(f"lost reply: round trip {k} of {steps} of a call")
    with contextlib.suppress(Exception):
        leader.call(compute)
    if not trips.lost:
        return
    what = f"the reply to round trip {k} of {steps} of a call was lost{resent(trips)}"
    other = ctx.factory(ctx.client(), key, ttl)
    before = len(runs)
    try:
        value = other.call(compute)
    except Exception:
        return  # a failed leader may free its waiters with an error (leader-failure allows it)
    if value != 3:
        raise CheckFailed(f"{what}; the next caller got {value!r}, not the function's 3", prop=SHARED_RESULT)
    if len(runs) > before + 1:
        raise CheckFailed(
            f"{what}; the next call ran the function {len(runs) - before} times", prop=RUNS_ONCE
        )


# --- transactions ---------------------------------------------------------------------------------


def transaction_check(ctx: CheckContext) -> str:
    """Each round trip of a transfer loses its reply; then another client transfers too: the
    balances are each transfer applied once (the first: once or not at all)."""
    with own_clients() as extra:
        made = itertools.count()

        def opened(client: redis.Redis) -> Any:
            obj = ctx.factory(client, ctx.namespace.child("lost", str(next(made))))
            for account in ACCOUNTS:
                obj.open(account, OPENING)
            return obj

        steps = count_round_trips(ctx, extra, lambda bank: bank.transfer("a", "b", 30), opened)
        opening = dict.fromkeys(ACCOUNTS, OPENING)
        for k in range(1, steps + 1):
            prefix = ctx.namespace.child("lost", str(next(made)))
            setup = ctx.factory(ctx.client(), prefix)
            for account in ACCOUNTS:
                setup.open(account, OPENING)
            client, trips = tapped_client(ctx, extra)
            first = ctx.factory(client, prefix)
            trips.lose_after(k - 1, lost(k, steps))
            ctx.note(f"lost reply: round trip {k} of {steps} of transfer('a', 'b', 30)")
            try:
                applied: bool | None = bool(first.transfer("a", "b", 30))
            except Exception:
                applied = None
            if not trips.lost:
                continue
            what = f"the reply to round trip {k} of {steps} of transfer('a', 'b', 30) was lost{resent(trips)}"
            with expect(f"{what}; another client's transfer('b', 'c', 10)", prop=APPLIES_ONCE):
                second = bool(setup.transfer("b", "c", 10))
            with expect(f"{what}; reading the balances", prop=APPLIES_ONCE):
                final = {str(a): int(v) for a, v in dict(setup.balances(list(ACCOUNTS))).items()}
            done = [("b", "c", 10)] if second else []
            maybe = [("a", "b", 30)] if applied is None else []
            if applied:
                done.append(("a", "b", 30))
            if problem := explain_final(opening, done, maybe, final):
                raise CheckFailed(f"{what}; then {problem}", prop=APPLIES_ONCE)
    return f"the reply to each of {steps} round trip(s) of a transfer lost: applied once or not at all"


LOCK_LOST_REPLY = Check(
    "lost-reply",
    "each round trip's reply lost after the server ran it: grants true, the lock free again",
    lock_check,
    MUTUAL_EXCLUSION,
)
LOCK_REACQUIRE = Check(
    "reacquire",
    "a release's reply lost, another client takes the lock: the releasing client's next acquire is refused",
    reacquire_check,
    MUTUAL_EXCLUSION,
    needs=MUTUAL_EXCLUSION,  # judged only for a lock that claims it (the battery is the lock family's)
)
REGISTRY_LOST_REPLY = Check(
    "lost-reply",
    "each round trip's reply lost after the server ran it: one id per name, ids 1..n",
    registry_check,
    GAP_FREE,
)
FLIGHT_LOST_REPLY = Check(
    "lost-reply",
    "each round trip's reply lost after the server ran it: the next caller gets the value",
    flight_check,
    PROGRESS,
)
TRANSACTION_LOST_REPLY = Check(
    "lost-reply",
    "each round trip's reply lost after the server ran it: the transfer applies once or not at all",
    transaction_check,
    APPLIES_ONCE,
)
