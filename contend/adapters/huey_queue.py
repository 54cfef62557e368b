"""huey's task queue on its Redis storage (`RedisHuey`, huey/storage.py `RedisStorage`).

What it claims: "a little task queue"; the Redis storage's `enqueue` is `LPUSH huey.redis.<name>`
and its `dequeue` `BRPOP` of the same list for at most `read_timeout` seconds (`RPOP` when
`blocking=False`). There is no acknowledgement and no visibility lease: a consumer that pops a
task owns it, and one that dies with it loses it (huey's consumer runs what it popped; a task
that fails is retried only if it was declared with `retries`).

Mapping: a queue object is one consumer's `RedisHuey(<name>, connection_pool=<the client's
pool>, clean_name=False)` with one task, `job(item)`. `put(item)` → `job(item)` (what calling a
huey task does: enqueue it), whose id is the task's id. `take(timeout)` → `huey.dequeue()` with
the storage's `read_timeout` set to `timeout` (`blocking=False` for 0), the item being the
task's argument. `ack(id)` → `huey.execute(task)` on the task taken, what a huey consumer does
with it. No `lease_ms`: the queue never hands a task out twice, which is what it promises.
"""

from __future__ import annotations

from typing import Any

import redis
from huey import RedisHuey  # type: ignore[import-not-found,import-untyped]

FIDELITY = "a task enqueued by calling it, taken by huey.dequeue() with the storage's read_timeout, acked by huey.execute()"


class HueyQueue:
    """One consumer's huey, behind contend's queue protocol."""

    def __init__(self, client: redis.Redis, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ValueError(f"a queue needs a non-empty name, got {name!r}")
        self.huey: Any = RedisHuey(name, connection_pool=client.connection_pool, clean_name=False)
        self.job: Any = self.huey.task(name="job")(_job)
        self.taken: dict[str, Any] = {}

    def put(self, item: Any) -> str:
        return str(self.job(item).id)

    def take(self, timeout: float) -> tuple[str, Any] | None:
        storage = self.huey.storage
        storage.blocking, storage.read_timeout = timeout > 0, timeout
        task = self.huey.dequeue()
        if task is None:
            return None
        self.taken[task.id] = task
        return task.id, task.args[0]

    def ack(self, job_id: str) -> None:
        task = self.taken.pop(job_id, None)
        if task is not None:
            self.huey.execute(task)


def _job(item: Any) -> None:
    """The task every item is enqueued as: it does nothing (the consumer's work is contend's)."""


def factory(client: redis.Redis, name: str) -> HueyQueue:
    """The queue-protocol factory."""
    return HueyQueue(client, name)


def fidelity(client: redis.Redis, key: str) -> str:
    """A task put and taken through the adapter: the list huey pushed it to, and what came back."""
    queue = factory(client, key)
    job_id = queue.put("probe")
    stored = f"huey.redis.{key}"
    assert client.llen(stored) == 1, f"nothing was pushed to {stored}"
    got = queue.take(0)
    assert got == (job_id, "probe"), f"took {got!r}"
    queue.ack(job_id)
    assert client.llen(stored) == 0
    return "LPUSH huey.redis.<key>, RPOP for take(0): the task's id and argument came back"
