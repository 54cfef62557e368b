"""The jobs workload: producers and consumers on a work queue (issue 44), with the catalog's
correct queues (list_queue, stream_queue) or the user's own (`--impl M:F --kind queue`).

Each operation is one job's round: the user puts a job on one of the `hot_keys` queues, takes the
next job from that queue (most often another user's) and acks it at once. So every user is a
producer and a consumer, `--users` counts both, and a job's end-to-end latency runs from the start
of its put to the return of its ack, whichever users did them (wall clock: the processes of one
machine agree on it). One take in CRASH_EVERY (the 5th, the 55th, ...) ends with the consumer's
death, the job in hand: it never acks, and the user takes on as a new consumer (a new queue
object). The dead consumer's job must come back once its lease runs out (what the redeliveries
count), as one more job to take: the user's first round after BACK_AFTER leases puts none, so
puts and takes stay even and no backlog builds up over the run.

Every job's fate is kept in the tally's ledger (contend.load.metrics.LEDGER), merged over the
Locust processes. After the run a fresh consumer drains every queue, and takes on for as long as
the protocol gives a lapsed job to come back (twice the lease, then one more), acking what it gets.
The run fails when a job is lost (put, its put returned, never completed in the run and never
drained), completed twice (two acks that returned within their taker's lease: ack-final says the
first one ends it), delivered after such an ack, or was never put (a phantom).
"""

from __future__ import annotations

import inspect
import random
import time
from typing import Any, ClassVar

import redis

from contend.impl import catalog
from contend.load.metrics import LEDGER, OperationMetrics, Tally, ledger_add
from contend.load.workload import QUEUE, InvariantResult, LoadWorkload, Operation, Strategy
from contend.subject.protocols import declared_lease
from contend.subject.subject import Subject

#: The visibility lease the workload asks of a factory that takes `lease_ms`, in ms: short, so a
#: dead consumer's job comes back within a few seconds' run (a factory without the keyword keeps
#: its own, and the end-of-run drain waits for it).
LEASE_MS = 500
#: One take in this many ends with the consumer's death, its job in hand (no ack): each user's
#: takes number CRASH_FIRST, CRASH_FIRST + CRASH_EVERY, ... (counted from 1, jobs taken only).
CRASH_EVERY = 50
CRASH_FIRST = 5
#: A dead consumer's job is counted back this many leases after its death (a stream queue claims
#: it once idle for 1.1 leases), when the user's next round puts no job of its own.
BACK_AFTER = 1.2
#: How long a take waits for a job, in seconds.
TAKE_TIMEOUT = 1.0
#: The end-of-run drain: a take's timeout while it runs out a queue.
DRAIN_TAKE = 0.05
#: The ceiling the sweep measures for this workload (contend.load.ceiling): LPUSH then RPOP.
CEILING_OP = "lpush-rpop"


def queue_object(factory: Any, client: redis.Redis, name: str) -> Any:
    """One consumer's queue object, given LEASE_MS if the factory takes `lease_ms`."""
    try:
        params = inspect.signature(factory).parameters.values()
        takes = any(p.name == "lease_ms" or p.kind is p.VAR_KEYWORD for p in params)
    except (TypeError, ValueError):
        takes = False
    if takes:
        try:
            return factory(client, name, lease_ms=LEASE_MS)
        except TypeError:
            pass
    return factory(client, name)


def lease_of(obj: Any, factory: Any) -> float | None:
    """The lease a queue object declares, in seconds (None: it never gives a job out twice)."""
    ms = declared_lease(obj, factory)
    return None if ms is None else ms / 1000


def job_item(uid: str) -> str:
    """The item a job carries: its uid and when its put started (epoch seconds)."""
    return f"{uid}|{time.time():.6f}"


def parse_item(item: Any) -> tuple[str, float | None]:
    """(uid, put time) of an item that came out; the item's text and None if it is not one of ours."""
    text = item.decode(errors="replace") if isinstance(item, bytes) else str(item)
    uid, sep, stamp = text.rpartition("|")
    try:
        return (uid, float(stamp)) if sep else (text, None)
    except ValueError:
        return text, None


class QueueWorkload(LoadWorkload):
    """Put a job, take the next one and ack it; `hot_keys` queues (1: every user on one)."""

    name = "jobs"
    summary = "producers and consumers on a work queue"
    ceiling = CEILING_OP

    #: Strategy -> the catalog's queue behind it.
    QUEUES: ClassVar[dict[str, str]] = {
        "list": "list_queue",
        "stream": "stream_queue",
        "brpop": "brpop_queue",
    }

    def all_strategies(self) -> dict[str, Strategy]:
        out = {}
        for name, entry in self.QUEUES.items():
            impl = catalog.by_name(entry)
            out[name] = Strategy(name, QUEUE, f"{entry}: {impl.summary}", impl.known_bad)
        return out

    def keys(self, prefix: str, hot_keys: int) -> list[str]:
        return [f"{prefix}:q{i}" for i in range(hot_keys)]

    def factory(self, strategy: str, impl: Subject | None) -> Any:
        if impl is not None:
            self.accept(impl)
            return impl.factory
        self.strategy(strategy)
        return catalog.by_name(self.QUEUES[strategy]).factory

    def operation(
        self,
        client: redis.Redis,
        prefix: str,
        strategy: str,
        hot_keys: int,
        ttl_ms: int,
        user_id: str,
        impl: Subject | None = None,
        shared: dict[str, Any] | None = None,
    ) -> Operation:
        factory = self.factory(strategy, impl)
        names = self.keys(prefix, hot_keys)
        queues: dict[str, Any] = {}
        rng = random.Random()
        count = taken_jobs = 0

        def queue(name: str) -> Any:
            if name not in queues:
                queues[name] = queue_object(factory, client, name)
            return queues[name]

        owed: list[float] = []  # when the jobs of this user's dead consumers are back (monotonic)

        def round_of_one_job(step: OperationMetrics) -> None:
            nonlocal count, taken_jobs
            name = rng.choice(names)
            if owed and time.monotonic() >= owed[0]:
                # A dead consumer's job is back by now, one more job to take: this round puts
                # none, so puts and takes stay even and no backlog builds up over the run.
                owed.pop(0)
            else:
                count += 1
                uid = f"{user_id}-{count}"
                step.keys = (uid,)
                ledger_add(step.ledger, uid, "put_unknown")  # until the put returns
                queue(name).put(job_item(uid))
                ledger_add(step.ledger, uid, "put_unknown", -1)
                ledger_add(step.ledger, uid, "put")
            consumer = queue(name)
            taken = time.monotonic()
            got = consumer.take(TAKE_TIMEOUT)
            if got is None:
                step.declined = True  # nothing came within the timeout
                return
            job, item = got
            done, put_at = parse_item(item)
            ledger_add(step.ledger, done, "delivered")
            taken_jobs += 1
            if taken_jobs % CRASH_EVERY == CRASH_FIRST % CRASH_EVERY:
                del queues[name]  # the consumer dies with the job; the user takes on as a new one
                lease = lease_of(consumer, factory)
                if lease is not None:  # it comes back once its lease has run out (claimed past it)
                    owed.append(time.monotonic() + lease * BACK_AFTER)
                step.declined = True
                return
            ledger_add(step.ledger, done, "ack_unknown")  # until the ack returns
            consumer.ack(job)
            acked = time.monotonic()
            lease = lease_of(consumer, factory)
            ledger_add(step.ledger, done, "ack_unknown", -1)
            if lease is None or acked - taken < lease:
                ledger_add(step.ledger, done, "completed")
                step.committed = True
                if put_at is not None:
                    step.latency = max(0.0, time.time() - put_at)
            else:
                ledger_add(step.ledger, done, "ack_late")

        return round_of_one_job

    def check(
        self, client: redis.Redis, prefix: str, hot_keys: int, tally: Tally, impl: Subject | None = None
    ) -> InvariantResult:
        factory = self.factory(tally.strategy, impl)
        drained = drain(factory, client, self.keys(prefix, hot_keys))
        return judge(tally.ledger, drained)


def drain(factory: Any, client: redis.Redis, names: list[str]) -> dict[str, int]:
    """Run every queue out with a fresh consumer, acking what it gets: the uid of every job that
    came out, and how many times. It takes until nothing comes, then, for a queue with a lease,
    waits out twice the lease (a job whose consumer died comes back by then) and takes on for one
    more lease."""
    got: dict[str, int] = {}
    for name in names:
        consumer = queue_object(factory, client, name)
        lease = lease_of(consumer, factory)
        _run_out(consumer, got, 0.0)
        if lease is not None:
            time.sleep(2 * lease)
            _run_out(consumer, got, time.monotonic() + lease)
    return got


def _run_out(consumer: Any, got: dict[str, int], until: float) -> None:
    """Take and ack until a take finds nothing once `until` (monotonic) has passed."""
    while True:
        job = consumer.take(DRAIN_TAKE)
        if job is not None:
            uid, _ = parse_item(job[1])
            got[uid] = got.get(uid, 0) + 1
            consumer.ack(job[0])
        elif time.monotonic() >= until:
            return


def judge(ledger: dict[str, list[int]], drained: dict[str, int]) -> InvariantResult:
    """Nothing lost, no double completion, nothing acked delivered again, no phantom."""
    col = {c: i for i, c in enumerate(LEDGER)}
    lost, twice, again, phantom = [], [], [], []
    for uid, e in ledger.items():
        put, maybe_put = e[col["put"]], e[col["put_unknown"]]
        completed = e[col["completed"]]
        if put == 0 and maybe_put == 0:
            phantom.append(uid)
        if completed > 1:
            twice.append(uid)
        if completed and drained.get(uid):
            again.append(uid)
        settled = completed or e[col["ack_late"]] or e[col["ack_unknown"]] or drained.get(uid)
        if put and not settled:
            lost.append(uid)
    phantom += [uid for uid in drained if uid not in ledger]
    puts = sum(1 for e in ledger.values() if e[col["put"]])
    done = sum(1 for e in ledger.values() if e[col["completed"]])
    problems = []
    if lost:
        problems.append(
            f"{len(lost)} of {puts} job(s) lost: put, never completed, and not there when a fresh "
            f"consumer drained the queue after the run (e.g. {', '.join(sorted(lost)[:3])})"
        )
    if twice:
        problems.append(
            f"{len(twice)} job(s) completed twice: two acks returned within their taker's lease "
            f"(e.g. {', '.join(sorted(twice)[:3])})"
        )
    if again:
        problems.append(
            f"{len(again)} job(s) acked within their lease came out again in the drain "
            f"(e.g. {', '.join(sorted(again)[:3])})"
        )
    if phantom:
        problems.append(f"{len(phantom)} item(s) came out that were never put (e.g. {sorted(phantom)[0]!r})")
    if problems:
        return InvariantResult(False, tuple(problems))
    left = sum(drained.values())
    return InvariantResult(
        True,
        (
            f"nothing lost, nothing completed twice: {puts} job(s) put, {done} completed during the "
            f"run, {left} drained after it",
        ),
    )
