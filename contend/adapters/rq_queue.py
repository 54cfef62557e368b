"""RQ's queue (rq/queue.py) consumed as RQ's `SimpleWorker` consumes it (rq/worker).

What it claims: "RQ (Redis Queue) is a simple Python library for queueing jobs and processing
them in the background with workers"; `Queue.enqueue(f, *args)` stores the job (a hash) and
pushes its id (RPUSH `rq:queue:<name>`); `Queue.dequeue_any(queues, timeout)` moves the next id
into the queue's intermediate list (LMOVE, or BLMOVE for at most `timeout` seconds) and fetches
the job; a worker then runs it (`execute_job`: the started-job registry, the job, its result,
the finished registry). A worker that dies mid-job leaves it to RQ's maintenance, which fails
abandoned jobs (the failed-job registry) rather than running them again: RQ hands a job out once.

Mapping: a queue object is one consumer: `Queue(<name>, connection=client)` and a
`SimpleWorker([queue], connection=client, name=<name>-<consumer>)` whose `death_penalty_class`
is RQ's `TimerDeathPenalty` (a job timeout by timer, which works outside the main thread; the
default uses SIGALRM). `put(item)` → `queue.enqueue(job, item, result_ttl=0)` (its documented option: no result kept),
the id the job's; the queue's `job_class` is RQ's Job keyed under the queue's name. `take(timeout)` →
`Queue.dequeue_any([queue], timeout or None, connection=client)` (None: one LMOVE; RQ refuses 0),
the item being the job's argument. `ack(id)` → `worker.execute_job(job, queue)`, what the
worker does with a job it dequeued. No `lease_ms`: RQ never hands a job out twice.
"""

from __future__ import annotations

import uuid
from typing import Any

import redis
from rq import Queue, SimpleWorker  # type: ignore[import-not-found,import-untyped]
from rq.job import Job  # type: ignore[import-not-found,import-untyped]
from rq.timeouts import TimerDeathPenalty  # type: ignore[import-not-found,import-untyped]

FIDELITY = "enqueue (result_ttl=0), Queue.dequeue_any (BLMOVE for the timeout) and SimpleWorker.execute_job"


class ThreadWorker(SimpleWorker):  # type: ignore[misc]
    """RQ's SimpleWorker with its timer death penalty: its default (SIGALRM) works only in the
    main thread, and contend's consumers are threads."""

    death_penalty_class = TimerDeathPenalty


def job(item: Any) -> None:
    """The function every item is enqueued for: it does nothing (the consumer's work is contend's)."""


class RQQueue:
    """One RQ consumer behind contend's queue protocol."""

    def __init__(self, client: redis.Redis, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a queue needs a non-empty name, got {name!r}")
        self.client = client
        # RQ's custom job class (its `job_class` option) whose hashes are keyed under the queue's
        # name, so they stay in contend's namespace (RQ's default is rq:job:<id> for every queue).
        job_class = type("NamespacedJob", (Job,), {"redis_job_namespace_prefix": f"rq:job:{name}:"})
        self.queue: Any = Queue(name, connection=client, job_class=job_class)
        self.worker: Any = ThreadWorker(
            [self.queue], connection=client, name=f"{name}-{uuid.uuid4().hex[:8]}", job_class=job_class
        )
        self.taken: dict[str, Any] = {}

    def put(self, item: Any) -> str:
        return str(self.queue.enqueue(job, item, result_ttl=0).id)

    def take(self, timeout: float) -> tuple[str, Any] | None:
        try:
            got = Queue.dequeue_any(
                [self.queue], timeout or None, connection=self.client, job_class=self.queue.job_class
            )
        except Exception as exc:  # DequeueTimeout: nothing came in time
            if type(exc).__name__ == "DequeueTimeout":
                return None
            raise
        if got is None:
            return None
        taken, _ = got
        self.taken[taken.id] = taken
        return taken.id, taken.args[0]

    def ack(self, job_id: str) -> None:
        taken = self.taken.pop(job_id, None)
        if taken is not None:
            self.worker.execute_job(taken, self.queue)


def factory(client: redis.Redis, name: str) -> RQQueue:
    """The queue-protocol factory."""
    return RQQueue(client, name)


def fidelity(client: redis.Redis, key: str) -> str:
    """A job put, taken and acked through the adapter: where RQ kept it, and what came back."""
    queue = factory(client, key)
    job_id = queue.put("probe")
    assert client.lrange(f"rq:queue:{key}", 0, -1) == [job_id.encode()], "the id is not in rq:queue:<key>"
    got = queue.take(0)
    assert got == (job_id, "probe"), f"took {got!r}"
    assert client.exists(f"rq:job:{key}:{job_id}"), "the job's hash is not rq:job:<key>:<id>"
    queue.ack(job_id)
    assert not client.exists(f"rq:job:{key}:{job_id}"), "the job outlived its ack (result_ttl=0)"
    return "RPUSH rq:queue:<key>, LMOVE for take(0), execute_job: the job done and gone (result_ttl=0)"
