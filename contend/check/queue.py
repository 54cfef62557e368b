"""The queue battery: the queue model, producers and consumers at once, acks of ids the queue never
handed out, and bad input. Crashes, lost replies, stalls and lapsed leases are the state machine's
(the `schedule` check), on the virtual clock the server keeps.

Every queue object is made with `queue_of`: a factory that takes `lease_ms` is given a long one,
so no lease runs out in these real-time checks (a consumer here acks at once); one that does not
keeps its own, and a check that sees a lease older than half of it when something goes wrong says
so (inconclusive) rather than blame the queue.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import itertools
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from contend.check.bad_input import with_client
from contend.check.burst import Called, awaited, crowd, errors_summary, to_the_end
from contend.check.framework import NOT_JUDGED, Check, CheckContext, CheckFailed, CheckInconclusive, expect
from contend.impl.catalog import ACK_FINAL, BAD_INPUT, FIFO, NO_DOUBLE_DELIVERY, NO_LOSS, NO_PHANTOM
from contend.models.base import Op
from contend.models.queue import OK, REFUSED, QueueModel
from contend.schedule import Scheduler
from contend.subject.protocols import declared_lease

#: The lease asked of a factory that takes `lease_ms` (real time: nothing here holds a job for long).
CHECK_LEASE_MS = 60_000


def queue_of(ctx: CheckContext, client: Any, name: str) -> Any:
    """One queue object: with CHECK_LEASE_MS if the factory takes `lease_ms`."""
    try:
        params = inspect.signature(ctx.factory).parameters.values()
        takes = any(p.name == "lease_ms" or p.kind is p.VAR_KEYWORD for p in params)
    except (TypeError, ValueError):
        takes = False
    if takes:
        with contextlib.suppress(TypeError):
            return ctx.factory(client, name, lease_ms=CHECK_LEASE_MS)
    return ctx.factory(client, name)


def lease_seconds(queue: Any) -> float | None:
    """The lease a queue object declares (`lease_ms`), in seconds; None if it declares none."""
    declared = declared_lease(queue)
    return None if declared is None else declared / 1000


def _pair(got: Any, what: str) -> tuple[str, Any] | None:
    """A take's (id, item) with the id as text, or None; CheckFailed for anything else."""
    if got is None:
        return None
    if not isinstance(got, tuple | list) or len(got) != 2:
        raise CheckFailed(f"{what} returned {got!r}, not (id, item) or None", prop=NO_PHANTOM)
    job, item = got
    return (job.decode() if isinstance(job, bytes) else str(job)), _plain(item)


def _plain(item: Any) -> Any:
    return item.decode() if isinstance(item, bytes) else item


def _done(outcome: Any) -> bool:
    """An ack, nack or extend that returned (None, or anything but False and 0)."""
    return outcome is None or bool(outcome)


# --- the model -----------------------------------------------------------------------------------


def queue_model_check(ctx: CheckContext) -> str:
    """Puts, takes, acks, nacks, extends and acks of ids not held, by 3 clients one at a time,
    against models.queue (FIFO when claimed)."""
    rng = random.Random(ctx.options.seed)
    n = min(ctx.options.model_ops, 200)
    name = ctx.namespace.key("model")
    procs = [f"p{i}" for i in range(3)]
    with crowd(ctx, len(procs)) as people:
        queues = {
            p: Called(queue_of(ctx, c, name), people) for p, c in zip(procs, people.clients, strict=True)
        }
        return _model_run(ctx, rng, n, name, procs, queues)


def _model_run(
    ctx: CheckContext, rng: random.Random, n: int, name: str, procs: list[str], queues: dict[str, Any]
) -> str:
    lease = lease_seconds(queues["p0"])
    model = QueueModel(fifo=FIFO in ctx.subject.claims)
    state = model.init()
    held: dict[str, list[tuple[str, float]]] = {p: [] for p in procs}
    recent: list[str] = []
    items = itertools.count(1)
    put_items: set[str] = set()
    for step in range(n):
        ctx.note(f"model: operation {step} of {n}")
        p = rng.choice(procs)
        q = queues[p]
        roll = rng.random()
        mine = held[p]
        if roll < 0.35:
            item = f"item-{next(items)}"
            put_items.add(item)
            with expect(f"op {step}: {p} put({item!r})", prop=NO_LOSS):
                job = q.put(item)
            op = Op("put", item, job.decode() if isinstance(job, bytes) else str(job), name, p)
            text = f"{p} put({item!r}) → {op.output!r}"
        elif roll < 0.7 or not mine:
            with expect(f"op {step}: {p} take(0)", prop=NO_LOSS):
                got = _pair(q.take(0), f"op {step}: {p} take(0)")
            op = Op("take", None, got, name, p)
            text = f"{p} take(0) → {got!r}"
            if got is not None:
                mine.append((got[0], time.monotonic()))
        else:
            job, when = mine.pop(rng.randrange(len(mine)))
            choices = ["ack", "ack", "unknown-ack"]
            choices += [c for c in ("nack", "extend") if callable(getattr(q, c, None))]
            f = rng.choice(choices)
            if f == "unknown-ack":
                mine.append((job, when))
                job, f = f"contend-unknown-{step}", "ack"
            if f == "extend":
                mine.append((job, time.monotonic()))
            call = getattr(q, f)
            try:
                done = _done(call(job, CHECK_LEASE_MS) if f == "extend" else call(job))
            except Exception:
                done = False
            op = Op(f, job, OK if done else REFUSED, name, p)
            text = f"{p} {f}({job!r}) → {op.output}"
        recent = [*recent[-7:], text]
        legal, nxt = model.step(state, op)
        if not legal:
            _model_failure(model, state, op, step, recent, held, lease, put_items)
        state = nxt
    return f"{n} operations by 3 clients agree with the {model.name} model"


def _model_failure(
    model: QueueModel,
    state: Any,
    op: Op,
    step: int,
    recent: list[str],
    held: dict[str, list[tuple[str, float]]],
    lease: float | None,
    put_items: set[str],
) -> None:
    now = time.monotonic()
    if lease is not None and any(now - t > lease / 2 for jobs in held.values() for _, t in jobs):
        raise CheckInconclusive(
            f"op {step}: a take is older than half the queue's {lease:g} s lease; give the factory a "
            "lease_ms keyword (contend then asks for a long one) or a longer lease"
        )
    prop = NO_LOSS
    if op.f == "take" and op.output is not None:
        item = op.output[1]
        if all(j.item != item for j in (*state.ready, *state.maybe)) and all(
            j.item != item for _, j in state.held
        ):
            prop = ACK_FINAL if item in put_items else NO_PHANTOM
        elif any(j.item == item for _, j in state.held) and all(j.item != item for j in state.ready):
            prop = NO_DOUBLE_DELIVERY
        elif model.fifo:
            prop = FIFO
    raise CheckFailed(
        f"op {step}: {op.process} {op.f} returned {op.output!r}; not possible in the {model.name} model "
        f"({model.describe_state(state)}); last ops: {'; '.join(recent)}",
        prop=prop,
    )


# --- producers and consumers at once -------------------------------------------------------------


def queue_burst_check(ctx: CheckContext) -> str:
    """Half the clients put items while the other half take and ack them, all released together:
    every item comes out exactly once (nobody holds a job for long, so no lease runs out)."""
    k = max(2, ctx.options.burst_clients)
    producers, consumers = k // 2, k - k // 2
    per = 8
    name = ctx.namespace.key("burst")
    put_done = threading.Event()
    putting = [producers]
    guard = threading.Lock()
    got: list[tuple[str, Any, int]] = []

    async def produce(q: Any, p: int) -> list[str]:
        try:
            return [await awaited(q.put(f"p{p}-{i}")) for i in range(per)]
        finally:
            with guard:
                putting[0] -= 1
                if not putting[0]:
                    put_done.set()

    async def consume(q: Any, c: int) -> int:
        took, empty = 0, 0
        while empty < 2:
            pair = _pair(await awaited(q.take(0.05)), f"consumer {c} take(0.05)")
            if pair is None:
                empty += 1 if put_done.is_set() else 0
                continue
            empty = 0
            with guard:
                got.append((*pair, c))
            await awaited(q.ack(pair[0]))
            took += 1
        return took

    with crowd(ctx, k) as people:
        queues = [queue_of(ctx, client, name) for client in people.clients]
        lease = lease_seconds(queues[0])
        works: list[tuple[Callable[..., Any], Any, int]] = [
            (produce, q, p) for p, q in enumerate(queues[:producers])
        ]
        works += [(consume, q, c) for c, q in enumerate(queues[producers:])]
        if people.asynchronous:  # tasks on the crowd's loop
            calls = [functools.partial(work, q, i) for work, q, i in works]
        else:  # threads, each running its work to the end (a synchronous queue never awaits)
            calls = [functools.partial(to_the_end, work, q, i) for work, q, i in works]
        started = time.monotonic()
        outcomes = people.at_once(calls)
        left = _pair(people.call(lambda: queues[0].take(0)), "a take after the burst")
    if failed := errors_summary(outcomes):
        raise CheckFailed(f"{producers} producers and {consumers} consumers at once: {failed}", prop=NO_LOSS)
    put = [f"p{p}-{i}" for p in range(producers) for i in range(per)]
    counts = Counter(item for _, item, _ in got)
    phantom = sorted(set(counts) - set(put), key=str)
    if phantom:
        raise CheckFailed(f"takes returned items never put: {phantom[:5]}", prop=NO_PHANTOM)
    twice = [item for item, n in counts.items() if n > 1]
    if twice:
        if lease is not None and time.monotonic() - started > lease / 2:
            raise CheckInconclusive(f"the burst outlasted half the queue's {lease:g} s lease")
        who = [c for _, item, c in got if item == twice[0]]
        raise CheckFailed(
            f"{len(twice)} item(s) went to two consumers within their lease, e.g. {twice[0]!r} to consumers "
            f"{who} (each acked at once)",
            prop=NO_DOUBLE_DELIVERY,
        )
    missing = [item for item in put if item not in counts]
    if missing:
        raise CheckFailed(
            f"{len(missing)} of {len(put)} items put never came out, e.g. {missing[0]!r}"
            + (f" (a take afterwards got {left!r})" if left else ""),
            prop=NO_LOSS,
        )
    if left is not None:
        raise CheckFailed(
            f"every item was taken and acked, yet a take afterwards got {left!r}", prop=ACK_FINAL
        )
    return (
        f"{producers} producers and {consumers} consumers at once: each of {len(put)} items came out "
        "once, and nothing after"
    )


# --- acks of ids the queue never handed out ------------------------------------------------------


def unknown_ack_check(ctx: CheckContext) -> str:
    """An ack of an id the queue never handed out, or of a job already acked, is refused or does
    nothing: the other jobs still come out, each once."""
    name = ctx.namespace.key("unknown-ack")
    with crowd(ctx, 2) as people:
        queue, other = (Called(queue_of(ctx, c, name), people) for c in people.clients)
        return _unknown_acks(queue, other)


def _unknown_acks(queue: Any, other: Any) -> str:
    with expect("put('first'), put('second'), put('third')", prop=NO_LOSS):
        queue.put("first")
        queue.put("second")
        queue.put("third")
        got = _pair(queue.take(0), "take(0)")
    if got is None:
        raise CheckFailed("take(0) got nothing right after three puts", prop=NO_LOSS)
    with expect(f"ack({got[0]!r})", prop=NO_LOSS):
        queue.ack(got[0])
    bogus = ["contend-never-issued", "999999999", "0-1", f"{got[0]}x", got[0]]
    outcomes = []
    for job in bogus:
        for q in (queue, other):
            try:
                outcomes.append("refused" if not _done(q.ack(job)) else "returned")
            except Exception as exc:
                outcomes.append(type(exc).__name__)
    left = []
    for _ in range(4):
        pair = _pair(other.take(0), "take(0)")
        if pair is None:
            break
        left.append(pair[1])
        other.ack(pair[0])
    expected = sorted({"first", "second", "third"} - {got[1]})
    if sorted(left) != expected:
        acked = [item for item in expected if item not in left]
        prop = NO_LOSS if acked else (ACK_FINAL if got[1] in left else NO_PHANTOM)
        raise CheckFailed(
            f"after acks of ids never handed out (and of {got[0]!r} again), the jobs still queued came out "
            f"as {left}, not {expected}",
            prop=prop,
        )
    kinds = ", ".join(sorted(set(outcomes)))
    return f"{len(outcomes)} acks of ids not held ({kinds}) changed nothing: the other jobs came out once"


# --- a consumer whose lease ran out ----------------------------------------------------------------

#: The lease the stale-holder check asks for (virtual time: it costs nothing).
STALE_LEASE_MS = 10_000


def stale_holder_check(ctx: CheckContext) -> str:
    """For each of ack, nack and extend the queue has: consumer A takes a job and goes silent past
    its lease; B gets the job again; A then acks, nacks or extends it. B's lease must hold: no third
    consumer gets the job while it is valid. Run on the scheduler, on the virtual clock the server
    keeps: the lease runs out exactly when the check says."""
    if ctx.target.clock is None:
        return f"{NOT_JUDGED} (leases must run out on the clock the check keeps)"
    done = []
    probe = queue_with_lease(ctx, _scheduled_client(ctx), ctx.namespace.key("stale", "probe"))
    actions = [a for a in ("ack", "nack", "extend") if callable(getattr(probe, a, None))]
    for action in actions:
        ctx.note(f"stale-holder: a stale {action}")
        done.append(_stale(ctx, action))
    return "; ".join(done)


def queue_with_lease(ctx: CheckContext, client: Any, name: str) -> Any:
    """A queue object with STALE_LEASE_MS if the factory takes `lease_ms`, else its own lease."""
    try:
        return ctx.factory(client, name, lease_ms=STALE_LEASE_MS)
    except TypeError:
        return ctx.factory(client, name)


def _scheduled_client(ctx: CheckContext) -> Any:
    """A client for a scheduled consumer, of the kind the queue takes: a redis.asyncio one for async
    code (it connects on its first command, on its scheduled client's own loop, and the scheduler
    closes it there)."""
    return ctx.target.async_client() if getattr(ctx.subject, "asynchronous", False) else ctx.client()


def _stale(ctx: CheckContext, action: str) -> str:
    name = ctx.namespace.key("stale", action)
    conns = [_scheduled_client(ctx) for _ in range(3)]
    a, b, c = (queue_with_lease(ctx, conn, name) for conn in conns)
    lease = lease_seconds(a)
    if lease is None:
        return (
            f"a stale {action}: not judged (the queue declares no lease, so it never gives a job out twice)"
        )
    with Scheduler(clock=ctx.target.clock) as s:
        for conn in conns:
            s.add_client(connection=conn)

        def run(index: int, call: Callable[[], Any], label: str) -> Any:
            s.start(index, call, label)
            while (who := s.next_alone(index)) is not None:
                s.step(who)
            outcome = s.clients[index].outcome
            if outcome.error is not None and label.startswith(("put", "take")):
                raise CheckFailed(
                    f"a stale {action}: {label} raised {type(outcome.error).__name__}: {outcome.error}"
                )
            return outcome.value

        run(0, lambda: a.put("job"), "put('job')")
        got = _pair(run(0, lambda: a.take(0), "take(0)"), "take(0)")
        if got is None:
            raise CheckFailed(f"a stale {action}: take(0) got nothing right after a put", prop=NO_LOSS)
        s.advance(2 * lease, note="A is silent for twice its lease")
        again = None
        for _ in range(30):  # takes go on for another lease and a half: redelivery's promise
            again = _pair(run(1, lambda: b.take(0), "take(0)"), "take(0)")
            if again is not None:
                break
            s.advance(lease / 20, note="B tries again")
        if again is None or again[1] != "job":
            raise CheckFailed(
                f"a stale {action}: consumer A took the job and went silent for twice its {lease:g} s lease; "
                f"takes over another lease and a half got {again!r}, not the job",
                prop=NO_LOSS,
            )
        call = (
            (lambda: a.extend(got[0], int(10 * lease * 1000)))
            if action == "extend"
            else (lambda: getattr(a, action)(got[0]))
        )
        run(0, call, f"{action}({got[0]!r})")
        s.advance(lease / 10, note="a tenth of B's lease passes")
        third = _pair(run(2, lambda: c.take(0), "take(0)"), "take(0)")
    if third is not None and third[1] == "job":
        raise CheckFailed(
            f"consumer A took the job, went silent past its {lease:g} s lease, and B took it again; A's {action} "
            f"then gave it to C while B's lease was valid (a tenth of it had passed)",
            prop=NO_DOUBLE_DELIVERY,
        )
    return f"a stale {action} left the new holder's lease alone"


# --- bad input -----------------------------------------------------------------------------------


class _Unserialisable:
    """An item no serialiser carries: not JSON, not picklable, not bytes or text to redis-py."""

    def __init__(self) -> None:
        self.lock = threading.Lock()

    def __reduce__(self) -> Any:
        raise TypeError("contend's bad item cannot be pickled")

    def __repr__(self) -> str:
        return "<an object holding a threading.Lock>"


def _snapshot(ctx: CheckContext) -> dict[bytes, Any]:
    """Every key of the namespace and its DUMP (a value's bytes; TTLs left out)."""
    return {key: ctx.namespace.client.dump(key) for _, key in ctx.namespace.keys()}  # noqa: SIM118


def queue_bad_input_check(ctx: CheckContext) -> str:
    """An empty name, take(timeout < 0) and put(an item no serialiser carries) raise (any exception)
    and change nothing; with a job already queued, it stays queued."""
    name = ctx.namespace.key("bad")
    raised = []

    def refused(what: str, call: Callable[[Any], Any]) -> None:
        before = _snapshot(ctx)
        try:
            with_client(ctx, call)
        except (CheckFailed, CheckInconclusive):
            raise
        except Exception as exc:
            if _snapshot(ctx) != before:
                raise CheckFailed(
                    f"{what} raised {type(exc).__name__} but changed what is stored first"
                ) from exc
            raised.append(type(exc).__name__)
            return
        raise CheckFailed(f"{what} was accepted; the protocol says it must raise and change nothing")

    refused("put on a queue with an empty name", lambda c: queue_of(ctx, c, "").put("x"))
    refused("take(0) on a queue with an empty name", lambda c: queue_of(ctx, c, "").take(0))
    with_client(ctx, lambda c: queue_of(ctx, c, name).put("queued"))
    refused("take(-1)", lambda c: queue_of(ctx, c, name).take(-1))
    refused(
        "put(an object holding a threading.Lock)", lambda c: queue_of(ctx, c, name).put(_Unserialisable())
    )
    got = with_client(ctx, lambda c: queue_of(ctx, c, name).take(0))
    if _pair(got, "take(0)") is None or _plain(got[1]) != "queued":
        raise CheckFailed(
            f"the job queued before the bad input did not come out as it was: take(0) → {got!r}"
        )
    return f"{len(raised)} bad inputs refused ({', '.join(sorted(set(raised)))}), nothing changed"


QUEUE_CHECKS: list[Check] = [
    Check("model", "puts, takes and acks one at a time against the queue model", queue_model_check, NO_PHANTOM),
    Check(
        "burst", "producers and consumers released together: every item out exactly once",
        queue_burst_check, NO_DOUBLE_DELIVERY,
    ),
    Check(
        "unknown-ack", "acks of ids never handed out, or already acked, change nothing",
        unknown_ack_check, NO_LOSS,
    ),
    Check(
        "stale-holder", "a consumer past its lease acks, nacks or extends a job another now holds",
        stale_holder_check, NO_DOUBLE_DELIVERY,
    ),
    Check(
        "bad-input", "an empty name, take(-1) and an item no serialiser carries refused, nothing changed",
        queue_bad_input_check, BAD_INPUT,
    ),
]  # fmt: skip
