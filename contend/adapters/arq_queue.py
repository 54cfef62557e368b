"""arq's job queue (arq/connections.py `ArqRedis.enqueue_job`, arq/worker.py `Worker`), consumed one
job at a time by arq's own worker.

What it claims (its installed source): `enqueue_job` stores the job (`arq:job:<id>`, with a TTL)
and adds its id to the queue's sorted set, scored by when it may run. A worker's poll
(`Worker._poll_iteration`) reads the ids that are due and `start_jobs` them: "For each job id, get
the job definition, check it's not running and start it in a task" — a WATCH/MULTI that sets
`arq:in-progress:<id>` for the largest job timeout plus 10 s, skipping a job whose key is there.
The job stays in the sorted set until it has run (`finish_job` removes it and its keys); a job
whose worker died is started again once its in-progress key has expired, up to `max_tries`.

Mapping: a queue object is one consumer: `ArqRedis(pool_or_conn=<the client's pool>,
default_queue_name=<name>)` and `Worker([job], queue_name=<name>, redis_pool=<it>, max_jobs=1000,
handle_signals=False, keep_result=0, max_tries=MAX_TRIES)`, made on the consumer's event loop (the
worker keeps the loop it was made on); before each poll its `max_jobs` is one more than the jobs
it runs, so that a poll starts one job (arq's worker would start up to 10 and run them itself).
`put(item)` → `enqueue_job("job", item, _job_id=<32 hex digits>)`: arq's default id is uuid4's 32
hex digits; these come from Python's `random`, which contend seeds, so that a replay enqueues the
same ids. `take(timeout)` → the worker's own polling (`arq.utils.poll(poll_delay)` and one
`_poll_iteration()` per turn, as `Worker.main` does) until it has started a job or `timeout` has
passed; the job function, once arq runs it, hands its id and argument to the take and waits.
`ack(id)` → the job function returns, and the take's worker finishes the job (`finish_job`); an id
this consumer does not hold: False. `lease_ms` is the in-progress key's TTL, `(job_timeout + 10)`
seconds. No nack and no extend: arq offers a consumer neither.

What cannot be judged so: arq runs a job's timeout (`asyncio.wait_for(job, job_timeout)`) on the
worker's loop, which runs here only while its consumer is in an operation, so a job that overruns
is failed at its consumer's next operation rather than at `job_timeout`. arq reads the wall clock
by a name it imported (`from time import time`): contend binds that name to the scheduler's clock
while it runs (contend.schedule.wall_clock), so the scores, and the order of jobs put in the same
millisecond, are those of the schedule.
"""

from __future__ import annotations

import asyncio
import random
from typing import Any

import redis.asyncio
from arq.connections import ArqRedis  # type: ignore[import-not-found,import-untyped]
from arq.utils import poll  # type: ignore[import-not-found,import-untyped]
from arq.worker import Worker, func  # type: ignore[import-not-found,import-untyped]

FIDELITY = (
    "enqueue_job, the worker's poll (_poll_iteration, one job at a time) and its own finish_job when the "
    "job function returns"
)
#: arq's default job timeout (`Worker(job_timeout=300)`): the in-progress key lives 10 s longer.
JOB_TIMEOUT_S = 300
#: `Worker(max_tries=...)`: arq fails a job started more often than this (default 5); contend's
#: consumers die and let leases lapse more often than a worker does, so the documented option is
#: raised rather than a sixth delivery read as a lost job.
MAX_TRIES = 1000
#: `Worker(max_jobs=...)`, the jobs a worker runs at once (arq's default: 10; a consumer here may
#: hold more, as the protocol lets it). Before each poll the adapter lowers the worker's `max_jobs`
#: to one more than it runs, so that a take starts one job.
MAX_JOBS = 1000
#: `Worker(poll_delay=...)`, arq's default: how long the worker waits between polls.
POLL_DELAY_S = 0.5


async def job(ctx: dict[str, Any], item: Any) -> None:
    """The function every item is enqueued for: it tells the consumer's take that arq started it,
    and waits for the consumer's ack (the consumer's work is contend's)."""
    consumer: ArqQueue = ctx["contend_consumer"]
    done = asyncio.get_running_loop().create_future()
    consumer.started(ctx["job_id"], item, done)
    await done


class ArqQueue:
    """One arq consumer behind contend's queue protocol (async)."""

    lease_ms = (JOB_TIMEOUT_S + 10) * 1000

    def __init__(self, client: redis.asyncio.Redis, name: str) -> None:
        self.name = name
        self.pool: Any = ArqRedis(pool_or_conn=client.connection_pool, default_queue_name=name)
        self.worker: Any = None
        self.held: dict[str, tuple[asyncio.Future[None], asyncio.Task[Any]]] = {}
        self._reported: list[tuple[str, Any, asyncio.Future[None]]] = []

    def _worker(self) -> Any:
        """The worker, made on the running loop the first time (arq's Worker keeps its loop)."""
        if self.worker is None:
            self.worker = Worker(
                [func(job, name="job")],
                queue_name=self.name,
                redis_pool=self.pool,
                max_jobs=MAX_JOBS,
                handle_signals=False,
                keep_result=0,
                max_tries=MAX_TRIES,
                job_timeout=JOB_TIMEOUT_S,
                poll_delay=POLL_DELAY_S,
                ctx={"contend_consumer": self},
            )
        return self.worker

    def started(self, job_id: str, item: Any, done: asyncio.Future[None]) -> None:
        """Called by the job function once arq runs it."""
        self._reported.append((job_id, item, done))

    async def put(self, item: Any) -> str:
        # enqueue_job's default id is uuid4().hex; one of the same form drawn from `random` (which
        # contend seeds for each example) lets a replay of a schedule enqueue the same ids.
        job_id = f"{random.getrandbits(128):032x}"
        enqueued = await self.pool.enqueue_job("job", item, _job_id=job_id)
        return str(enqueued.job_id)

    async def take(self, timeout: float) -> tuple[str, Any] | None:
        worker = self._worker()
        async for waited in poll(worker.poll_delay_s):
            before = set(worker.tasks)
            # Room for one job more than the consumer holds: one poll starts one job at most.
            worker.max_jobs = min(worker.job_counter + 1, MAX_JOBS)
            await worker._poll_iteration()
            for job_id in set(worker.tasks) - before:
                got = await self._report_of(worker.tasks[job_id])
                if got is not None:
                    return got
            if waited >= timeout:
                return None
        return None  # pragma: no cover (poll never ends)

    async def _report_of(self, task: asyncio.Task[Any]) -> tuple[str, Any] | None:
        """What the job function of `task` (arq's run_job) reported once arq started it; None when
        arq ended the task first (it failed the job: expired, or past max_tries)."""
        while not self._reported and not task.done():
            await asyncio.sleep(0)
        if not self._reported:
            return None
        job_id, item, done = self._reported.pop()
        self.held[job_id] = (done, task)
        return job_id, item

    async def ack(self, job_id: Any) -> bool:
        key = job_id.decode() if isinstance(job_id, bytes) else str(job_id)
        held = self.held.pop(key, None)
        if held is None:
            return False
        done, task = held
        if not done.done():
            done.set_result(None)
        await task  # arq's run_job: the job's end, then finish_job
        return True


def factory(client: redis.asyncio.Redis, name: str) -> ArqQueue:
    """The queue-protocol factory."""
    return ArqQueue(client, name)


async def fidelity_async(client: redis.asyncio.Redis, key: str) -> str:
    """A job put, taken and acked through the adapter: where arq kept it, and what came back."""
    queue = factory(client, key)
    job_id = await queue.put("probe")
    assert await client.zscore(key, job_id) is not None, "the id is not in the queue's sorted set"
    got = await queue.take(0)
    assert got == (job_id, "probe"), f"took {got!r}"
    assert await client.exists(f"arq:in-progress:{job_id}"), "no in-progress key while the job is held"
    assert await queue.ack(job_id)
    assert await client.zscore(key, job_id) is None, "the job stayed queued after its ack"
    assert not await client.exists(f"arq:job:{job_id}"), "the job's key outlived its ack"
    return "ZADD <key>, the worker's WATCH/MULTI in-progress key for take(0), finish_job on ack"
