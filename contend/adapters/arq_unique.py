"""arq's job uniqueness (`ArqRedis.enqueue_job(..., _job_id=...)`, arq/connections.py), read as a lock.

What it claims (enqueue_job's docstring): `_job_id` is the "ID of the job, can be used to enforce
job uniqueness", and enqueue_job returns "Job instance or None if a job with this ID already
exists". It WATCHes `arq:job:<id>`, checks that neither it nor `arq:result:<id>` exists, then in a
MULTI sets the job (PSETEX, its `_expires`: a day by default) and adds the id to the queue's sorted
set. The job exists until a worker has run it (`finish_job` deletes it; with `keep_result=0` no
result is kept under its id).

Mapping, as a lock whose key is the job id: `acquire()` → `enqueue_job("job", _job_id=<key>,
_queue_name=<key>)`, granted when it returns a Job, refused when it returns None (a blocking
acquire tries again, as a user of a try does: contend.adapters.polling). `release()` → the job is
run to its end by arq's worker: one pass of its poll, `Worker([job], queue_name=<key>,
redis_pool=..., keep_result=0, handle_signals=False)._poll_iteration()`, which starts the job
(the in-progress key's WATCH/MULTI) in a task of its own, then that task awaited (the job, then
`finish_job`). Not the worker's burst run (`async_run` with `burst=True`): after a release
cancelled between its in-progress MULTI and the job's task (contend cancels async operations at
their round trips), the job is marked in progress with nothing running it, and a burst worker
polls until the in-progress key expires (310 s): a release that hangs. One pass leaves the job to
that key's expiry instead. `ttl_ms` is not used: the job lives until it has run, or for
arq's default `_expires` (a day), so the only claim is what the docstring says: no second enqueue
of an id while its job exists (mutual exclusion). No fencing token, no extend.
"""

from __future__ import annotations

from typing import Any

import redis.asyncio
from arq.connections import ArqRedis  # type: ignore[import-not-found,import-untyped]
from arq.worker import Worker, func  # type: ignore[import-not-found,import-untyped]

from contend.adapters.polling import poll_async
from contend.adapters.units import check_lease

FIDELITY = (
    "enqueue_job with _job_id (a Job, or None when the id exists) to acquire; one pass of the worker's "
    "poll, and the job it started run to its end (keep_result=0), to release"
)


async def job(ctx: dict[str, Any]) -> None:
    """The job every acquire enqueues: it does nothing (the holder's work is contend's)."""


class ArqUniqueJob:
    """A job id's uniqueness behind contend's lock protocol (coroutine methods)."""

    def __init__(self, client: redis.asyncio.Redis, key: str, ttl_ms: int) -> None:
        check_lease(key, ttl_ms)
        self.key = key.decode() if isinstance(key, bytes) else key
        self.pool: Any = ArqRedis(pool_or_conn=client.connection_pool, default_queue_name=self.key)

    async def _enqueue(self) -> bool:
        return await self.pool.enqueue_job("job", _job_id=self.key, _queue_name=self.key) is not None

    async def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return await poll_async(self._enqueue, blocking, timeout)

    async def release(self) -> None:
        worker = Worker(
            [func(job, name="job")],
            queue_name=self.key,
            redis_pool=self.pool,
            keep_result=0,
            handle_signals=False,
        )
        await worker._poll_iteration()
        for task in list(worker.tasks.values()):
            await task


def factory(client: redis.asyncio.Redis, key: str, ttl_ms: int) -> ArqUniqueJob:
    """The lock-protocol factory."""
    return ArqUniqueJob(client, key, ttl_ms)


async def fidelity_async(client: redis.asyncio.Redis, key: str) -> str:
    """One acquire, a second refused, the release, and an acquire again: what arq kept meanwhile."""
    first, second = factory(client, key, 1000), factory(client, key, 1000)
    assert await first.acquire(blocking=False), "a fresh id was not enqueued"
    assert await client.exists(f"arq:job:{key}"), "no arq:job:<id> after the enqueue"
    assert not await second.acquire(blocking=False), "the id was enqueued twice"
    await first.release()
    assert not await client.exists(f"arq:job:{key}"), "the job outlived the worker's run"
    assert await second.acquire(blocking=False), "the id was refused after its job ran"
    await second.release()
    return "arq:job:<id> while enqueued, None for the same id, gone once the worker ran it"
