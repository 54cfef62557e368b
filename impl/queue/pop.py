"""Known-bad: BRPOP with no processing list. A job is gone from Redis the moment it is taken, so a
consumer that dies before it is done, or a take whose reply is lost, loses it for good."""

from __future__ import annotations

import json
from typing import Any

import redis

from contend.impl.queue.base import check_name, check_timeout, dumps, keys_of, text
from contend.impl.roundtrip import LuaScript


class PopQueue:
    """Jobs on one list: LPUSH to put, (B)RPOP to take, nothing to ack. Declares no lease: it
    never gives a job out twice, and never again either."""

    lease_ms = None

    # KEYS[1]: the list, KEYS[2]: the id counter. ARGV[1]: the item as JSON.
    # The new job's id; the job goes on the list as {"id": ..., "item": ...}.
    PUT = LuaScript(
        """
    local id = tostring(redis.call('INCR', KEYS[2]))
    redis.call('LPUSH', KEYS[1], '{"id":"' .. id .. '","item":' .. ARGV[1] .. '}')
    return id
    """
    )

    def __init__(self, client: redis.Redis, name: str) -> None:
        self.client = client
        self.name = check_name(name)
        self.keys = keys_of(self.name, "ready", "ids")

    def put(self, item: Any) -> str:
        return text(self.PUT(self.client, self.keys, [dumps(item)]))

    def take(self, timeout: float) -> tuple[str, Any] | None:
        wait = check_timeout(timeout)
        if wait <= 0:
            raw = self.client.rpop(self.keys[0])
        else:
            popped = self.client.brpop([self.keys[0]], wait)
            raw = None if popped is None else popped[1]
        if raw is None:
            return None
        job = json.loads(text(raw))
        return str(job["id"]), job["item"]

    def ack(self, job: Any) -> None:
        """Nothing to do: the job left Redis when it was taken."""


def factory(client: redis.Redis, name: str, **kwargs: Any) -> PopQueue:
    """The queue-protocol factory (any lease_ms given is ignored: there is no lease)."""
    kwargs.pop("lease_ms", None)
    return PopQueue(client, name, **kwargs)
