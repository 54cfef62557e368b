"""The rows of the scoreboard, in its order: the locks (contend.scoreboard.lock_rows), then the
libraries of the other families (ID generators, semaphores, queues; the rate limiters in
contend.scoreboard.limiter_rows), and how to pick them.
"""

from __future__ import annotations

from collections.abc import Sequence

from contend.errors import ContendError
from contend.impl.catalog import (
    ACK_FINAL,
    NO_DOUBLE_DELIVERY,
    NO_PHANTOM,
    NO_SPURIOUS_ERRORS,
    UNIQUE_IDS,
)
from contend.scoreboard.library import ID_FAMILY, Library, Quote
from contend.scoreboard.limiter_rows import LIMITER_ROWS
from contend.scoreboard.lock_rows import LOCK_ROWS

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
