"""Lost replies for async code, on the scheduler: the reply of each round trip in turn of an
uncontended operation is lost after the server ran it (the async gate drops the connection, the
task sees a ConnectionError or TimeoutError, as redis.asyncio reports it). What must hold is what
the synchronous check (contend.check.lost_reply) asks: a grant is true, the lock is free again
within a few TTLs, a name keeps one id with ids 1..n, and a transfer applies once or not at all.

Why apart from that check: it loses replies in real time through the round-trip tap
(contend.servers.tap), which wraps redis-py's synchronous connection only; a redis.asyncio
client's reply is lost here by the scheduler's async gate, at a round trip the check steps to
(contend.check.scheduled), and a lease left behind runs out in virtual time on servers that
keep the scheduler's clock. Extends, semaphores' own limits and single-flight have no async
implementation to judge yet: locks, registries and banks are here.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import time
from typing import Any

from contend.check.faults import FAULT_TTL
from contend.check.framework import Check, CheckContext, CheckFailed
from contend.check.scheduled import must_free_within, run_to_end, scheduled_clients
from contend.check.transactions import ACCOUNTS, OPENING
from contend.impl.catalog import (
    APPLIES_ONCE,
    GAP_FREE,
    MUTUAL_EXCLUSION,
    NO_SPURIOUS_ERRORS,
    PROGRESS,
    STABLE_IDS,
)
from contend.models.bank import explain_final
from contend.schedule.client import Status
from contend.schedule.gating import LostReply
from contend.schedule.scheduler import Scheduler
from contend.subject.protocols import granted

#: Round trips an uncontended operation may take before the check stops counting.
MAX_ROUND_TRIPS = 12
#: The lease while a grant is judged: it does not run out meanwhile.
LONG_TTL = 10_000


def _lose_at(s: Scheduler, index: int, k: int) -> bool:
    """Step client `index` to its `k`-th round trip and lose that one's reply (every other one a
    timeout); then run it to its end. False if the operation ended before its `k`-th."""
    sent = 0
    while (who := s.next_alone(index)) is not None:
        ready = who == index and s.clients[index].status is Status.READY
        if ready and sent == k - 1:
            s.step(index, lose=LostReply.CONNECTION if k % 2 else LostReply.TIMEOUT)
            while (who := s.next_alone(index)) is not None:
                s.step(who)
            return True
        s.step(who)
        sent += ready
    return False


def _count(ctx: CheckContext, operation: Any) -> int:
    """Round trips of `operation(client)` on a fresh object (twice: the first may load scripts)."""
    counted = 0
    for _ in range(2):
        with scheduled_clients(ctx, 1) as (s, conns):
            before = sum(1 for t in s.trace if t.sent)
            run_to_end(s, 0, operation(conns[0]), "count")
            counted = sum(1 for t in s.trace if t.sent) - before
    return max(1, min(counted, MAX_ROUND_TRIPS))


def lock_check(ctx: CheckContext) -> str:
    """Each round trip of an acquire of a free lock, of one held by another, and of a release
    loses its reply."""
    ttl = ctx.ttl(FAULT_TTL)
    keys = (ctx.namespace.key("async-lost", n) for n in itertools.count())

    def acquire(c: Any) -> Any:
        lock = ctx.factory(c, next(keys), ttl)
        return lambda: lock.acquire(blocking=False)

    acquiring = _count(ctx, acquire)

    def held_then_release(c: Any) -> Any:
        lock = ctx.factory(c, next(keys), ttl)

        async def both() -> Any:
            await lock.acquire(blocking=False)
            return await lock.release()

        return both

    releasing = max(1, _count(ctx, held_then_release) - acquiring)
    tried = 0
    for k in range(1, acquiring + 1):
        tried += _free(ctx, next(keys), k, acquiring, ttl) + _full(ctx, next(keys), k, acquiring)
    for k in range(1, releasing + 1):
        tried += _release(ctx, next(keys), k, releasing, ttl)
    return f"{tried} lost replies (acquire {acquiring}, release {releasing} round trip(s)): grants true, locks free again"


def _free(ctx: CheckContext, key: str, k: int, steps: int, ttl: int) -> int:
    """A lost reply in an acquire of a free lock: a grant it reports keeps another client out, and
    a lease it took unknowingly ends within a few of its (short) TTLs."""
    with scheduled_clients(ctx, 2) as (s, conns):
        holder, other = ctx.factory(conns[0], key, ttl), ctx.factory(conns[1], key, ttl)
        since = _now(s)  # the holder's lease cannot have begun earlier
        s.start(0, lambda: holder.acquire(blocking=False), "acquire()")
        if not _lose_at(s, 0, k):
            return 0
        outcome = s.clients[0].outcome
        what = f"the reply to round trip {k} of {steps} of an acquire of a free lock was lost"
        if outcome.error is None and granted(outcome.value):
            got = granted(run_to_end(s, 1, lambda: other.acquire(blocking=False), "acquire()").value)
            if got and _now(s) - since < 0.8 * ttl / 1000:  # else too slow to tell (real time only)
                raise CheckFailed(
                    f"{what}; the acquire reported success, yet another client acquired at once:\n"
                    + s.format_trace(),
                    prop=MUTUAL_EXCLUSION,
                )
            if got:
                with contextlib.suppress(Exception):
                    run_to_end(s, 1, lambda: other.release(), "release()")
            with contextlib.suppress(Exception):
                run_to_end(s, 0, lambda: holder.release(), "release()")
        must_free_within(ctx, s, key, ttl, what)
    return 1


def _full(ctx: CheckContext, key: str, k: int, steps: int) -> int:
    with scheduled_clients(ctx, 2) as (s, conns):
        holder, other = ctx.factory(conns[1], key, LONG_TTL), ctx.factory(conns[0], key, LONG_TTL)
        if not granted(run_to_end(s, 1, lambda: holder.acquire(blocking=False), "acquire()").value):
            raise CheckFailed(f"an uncontended acquire of {key} was refused", prop=PROGRESS)
        s.start(0, lambda: other.acquire(blocking=False), "acquire()")
        if not _lose_at(s, 0, k):
            return 0
        outcome = s.clients[0].outcome
        if outcome.error is None and granted(outcome.value):
            raise CheckFailed(
                f"the reply to round trip {k} of {steps} of an acquire was lost while c1 held the lock, and "
                f"the acquire reported success anyway:\n{s.format_trace()}",
                prop=MUTUAL_EXCLUSION,
            )
        with contextlib.suppress(Exception):
            run_to_end(s, 1, lambda: holder.release(), "release()")
    return 1


def _release(ctx: CheckContext, key: str, k: int, steps: int, ttl: int) -> int:
    with scheduled_clients(ctx, 1) as (s, conns):
        holder = ctx.factory(conns[0], key, ttl)
        if not granted(run_to_end(s, 0, lambda: holder.acquire(blocking=False), "acquire()").value):
            raise CheckFailed(f"an uncontended acquire of {key} was refused", prop=PROGRESS)
        s.start(0, lambda: holder.release(), "release()")
        if not _lose_at(s, 0, k):
            return 0
        must_free_within(ctx, s, key, ttl, f"the reply to round trip {k} of {steps} of a release was lost")
    return 1


def registry_check(ctx: CheckContext) -> str:
    """Each round trip of a registration loses its reply; then another client registers the same
    name and a second one: one id per name, ids 1..n."""
    spaces = (ctx.namespace.child("async-lost", str(n)) for n in itertools.count())

    def register(c: Any) -> Any:
        return _call(ctx.factory(c, next(spaces)), "a")

    steps = _count(ctx, register)
    for k in range(1, steps + 1):
        with scheduled_clients(ctx, 2) as (s, conns):
            prefix = next(spaces)
            first, other = ctx.factory(conns[0], prefix), ctx.factory(conns[1], prefix)
            s.start(0, _call(first, "a"), "register('a')")
            if not _lose_at(s, 0, k):
                continue
            got = s.clients[0].outcome
            what = f"the reply to round trip {k} of {steps} of register('a') was lost"
            a = run_to_end(s, 1, _call(other, "a"), "register('a')")
            b = run_to_end(s, 1, _call(other, "b"), "register('b')")
            if a.error is not None or b.error is not None:
                raise CheckFailed(
                    f"{what}; another client's registrations then raised {a.error or b.error}",
                    prop=NO_SPURIOUS_ERRORS,
                )
            if got.error is None and got.value != a.value:
                raise CheckFailed(
                    f"{what}; it returned {got.value} anyway, and another client's register('a') then "
                    f"returned {a.value}:\n{s.format_trace()}",
                    prop=STABLE_IDS,
                )
            if sorted([a.value, b.value]) != [1, 2]:
                raise CheckFailed(
                    f"{what}; then 'a' has id {a.value} and 'b' has id {b.value}, not 1 and 2:\n{s.format_trace()}",
                    prop=GAP_FREE,
                )
    return f"the reply to each of {steps} round trip(s) of a registration lost: one id per name, ids 1..n"


def transaction_check(ctx: CheckContext) -> str:
    """Each round trip of a transfer loses its reply; then another client transfers too: the
    balances are each transfer applied once (the first: once or not at all)."""
    spaces = (ctx.namespace.child("async-lost", str(n)) for n in itertools.count())
    counting = next(spaces)
    with scheduled_clients(ctx, 1) as (s, conns):
        _opened(ctx, s, ctx.factory(conns[0], counting))
    steps = _count(ctx, lambda c: _transfer(ctx.factory(c, counting), "a", "b", 30))
    opening = dict.fromkeys(ACCOUNTS, OPENING)
    for k in range(1, steps + 1):
        with scheduled_clients(ctx, 2) as (s, conns):
            prefix = next(spaces)
            first, other = ctx.factory(conns[0], prefix), ctx.factory(conns[1], prefix)
            _opened(ctx, s, first)
            s.start(0, _transfer(first, "a", "b", 30), "transfer('a', 'b', 30)")
            if not _lose_at(s, 0, k):
                continue
            got = s.clients[0].outcome
            what = f"the reply to round trip {k} of {steps} of transfer('a', 'b', 30) was lost"
            second = run_to_end(s, 1, _transfer(other, "b", "c", 10), "transfer('b', 'c', 10)")
            final = run_to_end(s, 1, functools.partial(other.balances, list(ACCOUNTS)), "balances")
            if second.error is not None or final.error is not None:
                raise CheckFailed(
                    f"{what}; another client's transfer and audit then raised {second.error or final.error!r}",
                    prop=APPLIES_ONCE,
                )
            done = [("b", "c", 10)] if second.value else []
            maybe = [("a", "b", 30)] if got.error is not None else []
            if got.error is None and got.value:
                done.append(("a", "b", 30))
            balances = {str(a): int(v) for a, v in dict(final.value).items()}
            if problem := explain_final(opening, done, maybe, balances):
                raise CheckFailed(f"{what}; then {problem}:\n{s.format_trace()}", prop=APPLIES_ONCE)
    return f"the reply to each of {steps} round trip(s) of a transfer lost: applied once or not at all"


def _opened(ctx: CheckContext, s: Scheduler, bank: Any) -> None:
    """Open the accounts with client 0 of `s`, each call run to its end."""
    for account in ACCOUNTS:
        opening = run_to_end(s, 0, functools.partial(bank.open, account, OPENING), "open")
        if opening.error is not None:
            raise CheckFailed(f"opening the accounts raised {opening.error!r}", prop=APPLIES_ONCE)


def _transfer(bank: Any, src: str, dst: str, amount: int) -> Any:
    return functools.partial(bank.transfer, src, dst, amount)


def _call(registry: Any, name: str) -> Any:
    return lambda: registry.register(name)


ASYNC_TRANSACTION_LOST_REPLY = Check(
    "lost-reply",
    "each round trip's reply lost after the server ran it (the task's connection dropped): the "
    "transfer applies once or not at all",
    transaction_check,
    APPLIES_ONCE,
)
ASYNC_LOCK_LOST_REPLY = Check(
    "lost-reply",
    "each round trip's reply lost after the server ran it (the task's connection dropped): grants true",
    lock_check,
    MUTUAL_EXCLUSION,
)
ASYNC_REGISTRY_LOST_REPLY = Check(
    "lost-reply",
    "each round trip's reply lost after the server ran it: one id per name, ids 1..n",
    registry_check,
    GAP_FREE,
)


def _now(s: Scheduler) -> float:
    """The time the server's leases run on: the scheduler's virtual clock where the server keeps it,
    else real time."""
    return s.vclock if s.clock is not None else time.monotonic()
