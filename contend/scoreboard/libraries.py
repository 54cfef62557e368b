"""The rows of the scoreboard, in its order: the locks (contend.scoreboard.lock_rows), then the
libraries of the other families (ID generators, semaphores, queues; the rate limiters in
contend.scoreboard.limiter_rows), and how to pick them.
"""

from __future__ import annotations

from collections.abc import Sequence

from contend.errors import ContendError
from contend.impl.catalog import (
    ACK_FINAL,
    MUTUAL_EXCLUSION,
    NO_DOUBLE_DELIVERY,
    NO_LOSS,
    NO_PHANTOM,
    NO_SPURIOUS_ERRORS,
    UNIQUE_IDS,
)
from contend.scoreboard.library import ID_FAMILY, Library, Quote
from contend.scoreboard.limiter_rows import LIMITER_ROWS
from contend.scoreboard.lock_rows import LOCK_ROWS

#: arq's queue (asyncio only), judged as its own worker consumes it. arq 0.28.0 caps redis-py below
#: 6 (`redis[hiredis]>=4.2.0,<6`), below the range contend's scheduler drives: it is installed
#: without its dependencies, beside click (its other one) and contend's redis-py.
ARQ_QUEUE = Library(
    "arq",
    "arq job queue, its Worker's poll",
    "arq",
    "contend.adapters.arq_queue:factory",
    claims=frozenset({NO_LOSS, NO_DOUBLE_DELIVERY, ACK_FINAL, NO_PHANTOM}),
    family="queue",
    configuration="`ArqRedis.enqueue_job('job', item)`; `take` is the `Worker`'s own poll "
    "(`_poll_iteration`, its `max_jobs` one above the jobs it runs: one job per poll), `ack` lets the job function return and the worker "
    "`finish_job` it; `keep_result=0`, `max_tries=1000`; lease: the in-progress key's job timeout + 10 s "
    "(310 s). arq pins redis<6: installed with --no-deps beside contend's redis-py",
    requirements=("click==8.5.1",),
    no_deps=("arq==0.28.0",),
    quotes=(
        Quote(
            "For each job id, get the job definition, check it's not running and start it in a task",
            "arq/worker.py (Worker.start_jobs)",
        ),
        Quote(
            "pipe.psetex(in_progress_key, int(self.in_progress_timeout_s * 1000), b'1')",
            "arq/worker.py (Worker.start_jobs: the in-progress key, job timeout + 10 s, is the lease)",
        ),
        Quote(
            "job already started elsewhere, or already finished and removed from queue",
            "arq/worker.py (Worker.start_jobs)",
        ),
        Quote("cancelled, will be run again", "arq/worker.py (Worker.run_job)"),
    ),
)

#: arq's job uniqueness (issue 42), read as a lock whose key is the job id (see the adapter).
ARQ_UNIQUE = Library(
    "arq-unique",
    "arq enqueue_job(_job_id=key), read as a lock",
    "arq",
    "contend.adapters.arq_unique:factory",
    claims=frozenset({MUTUAL_EXCLUSION}),
    configuration="acquire: `enqueue_job('job', _job_id=key, _queue_name=key)` is not None (a blocking "
    "acquire tries again every 5 ms); release: one pass of arq's `Worker(keep_result=0)` poll and the job "
    "it started run to its end; ttl_ms unused (the job lives until it runs, or arq's default `_expires`, "
    "a day)",
    requirements=("click==8.5.1",),
    no_deps=("arq==0.28.0",),
    quotes=(
        Quote(
            ":param _job_id: ID of the job, can be used to enforce job uniqueness",
            "arq/connections.py (ArqRedis.enqueue_job)",
        ),
        Quote(
            ":return: :class:`arq.jobs.Job` instance or ``None`` if a job with this ID already exists",
            "arq/connections.py (ArqRedis.enqueue_job)",
        ),
    ),
)

OTHER_ROWS: tuple[Library, ...] = (
    Library(
        "pottery-nextid",
        "pottery NextID, 1 master",
        "pottery",
        "contend.adapters.pottery_nextid:factory",
        claims=frozenset({UNIQUE_IDS, NO_SPURIOUS_ERRORS}),
        family=ID_FAMILY,
        configuration="`NextID(key=name, masters={client})`, `next(ids)`: ID allocation without names "
        "(not the registry protocol, which it does not offer)",
        requirements=("pottery==3.0.1",),
        quotes=(
            Quote("Distributed Redis-powered monotonically increasing ID generator.", "pottery/nextid.py"),
            Quote(
                "This algorithm safely and reliably produces monotonically increasing IDs across threads, "
                "processes, and even machines, without a single point of failure.",
                "pottery/nextid.py (NextID)",
            ),
        ),
    ),
    Library(
        "redis-semaphore",
        "Redis-Semaphore, stale_client_timeout",
        "redis-semaphore",
        "contend.adapters.redis_semaphore:factory",
        family="semaphore",
        configuration="`Semaphore(client, count=limit, namespace=key, stale_client_timeout=ttl)`",
        requirements=("redis-semaphore==0.2.2",),
        quotes=(
            Quote("A distributed semaphore and mutex built on Redis.", "setup.py (description)"),
            Quote(
                "timed_out_at = float(looked_at) + self.stale_client_timeout",
                "redis_semaphore/__init__.py (release_stale_locks)",
            ),
        ),
    ),
    Library(
        "dramatiq",
        "dramatiq ConcurrentRateLimiter",
        "dramatiq",
        "contend.adapters.dramatiq:factory",
        family="semaphore",
        configuration="`ConcurrentRateLimiter(RedisBackend(client=client), key, limit=limit, ttl=ttl_ms)`",
        requirements=("dramatiq==2.2.1",),
        quotes=(
            Quote(
                "A rate limiter that ensures that only `limit` concurrent operations may happen at the "
                "same time.",
                "dramatiq/rate_limits/concurrent.py",
            ),
            Quote(
                "You can use a concurrent rate limiter of size 1 to get a distributed mutex.",
                "dramatiq/rate_limits/concurrent.py",
            ),
            Quote(
                "ttl(int): The time in milliseconds that keys may live for.",
                "dramatiq/rate_limits/concurrent.py",
            ),
        ),
    ),
    Library(
        "huey-queue",
        "huey task queue",
        "huey",
        "contend.adapters.huey_queue:factory",
        claims=frozenset({NO_DOUBLE_DELIVERY, ACK_FINAL, NO_PHANTOM}),
        family="queue",
        configuration="`RedisHuey(name, connection_pool=...)`: `put` calls a task, `take` is "
        "`huey.dequeue()` (BRPOP for at most the timeout), `ack` is `huey.execute(task)`; no lease",
        requirements=("huey==3.5.4",),
        quotes=(
            Quote("a little task queue", "setup.py (description)"),
            Quote(
                "self.conn.brpop(self.queue_key, timeout=self.read_timeout)",
                "huey/storage.py (RedisStorage.dequeue: a popped task is the consumer's, with no ack)",
            ),
        ),
    ),
    Library(
        "rq",
        "RQ queue, SimpleWorker",
        "rq",
        "contend.adapters.rq_queue:factory",
        claims=frozenset({NO_DOUBLE_DELIVERY, ACK_FINAL, NO_PHANTOM}),
        family="queue",
        configuration="`Queue(name, connection=client).enqueue(job, item, result_ttl=0)`; `take` is "
        "`Queue.dequeue_any([queue], timeout)`, `ack` the `SimpleWorker`'s `execute_job` (timer death "
        "penalty); no lease",
        requirements=("rq==2.12.0",),
        quotes=(
            Quote(
                "RQ (Redis Queue) is a simple Python library for queueing jobs and processing them in "
                "the background with workers.",
                "README.md",
            ),
            Quote(
                "Class method returning the job_class instance at the front of the given set of Queues",
                "rq/queue.py (Queue.dequeue_any)",
            ),
        ),
    ),
    ARQ_QUEUE,
    ARQ_UNIQUE,
)

LIBRARIES: tuple[Library, ...] = LOCK_ROWS + OTHER_ROWS + LIMITER_ROWS


def by_key(keys: Sequence[str]) -> list[Library]:
    """The rows `keys` name (all when empty), in scoreboard order; ContendError for an unknown one."""
    known = {lib.key: lib for lib in LIBRARIES}
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise ContendError(f"--lib {unknown[0]!r} is not on the scoreboard; choose from {', '.join(known)}")
    wanted = set(keys)
    return [lib for lib in LIBRARIES if not wanted or lib.key in wanted]
