"""The stream queue for redis.asyncio: `stream_queue`'s commands, each awaited. XADD to put,
XAUTOCLAIM then XREADGROUP in one consumer group to take, XACK to ack.

Keys (one hash slot): `stream`, with the consumer group `workers` (made on first use). Each queue
object is a consumer of its own in the group. `AsyncStreamQueue` claims a job after it has sat
unacked for 1.1 leases; the known-bad `short_claim_factory` after half of one, so a consumer still
inside its lease sees its job handed to another (short_claim_queue's twin).
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import redis
import redis.asyncio

from contend.impl.queue.base import check_lease_ms, check_name, check_timeout, dumps, keys_of, loads, text
from contend.impl.queue.stream import GROUP, _entries

Command = Callable[[], Awaitable[Any]]


class AsyncStreamQueue:
    """At-least-once jobs on a stream and its consumer group, for a redis.asyncio client."""

    def __init__(
        self,
        client: redis.asyncio.Redis,
        name: str,
        *,
        lease_ms: int = 30_000,
        min_idle_ms: int | None = None,
    ) -> None:
        self.client = client
        self.name = check_name(name)
        self.lease_ms = check_lease_ms(lease_ms)
        self.min_idle_ms = check_lease_ms(
            min_idle_ms if min_idle_ms is not None else lease_ms + lease_ms // 10
        )
        (self.stream,) = keys_of(self.name, "stream")
        self.consumer = f"c-{uuid.uuid4().hex[:12]}"

    async def put(self, item: Any) -> str:
        """Queue `item` (a JSON value); its entry id."""
        return text(await self.client.xadd(self.stream, {"item": dumps(item)}))

    async def take(self, timeout: float) -> tuple[str, Any] | None:
        """A job idle past min_idle_ms (another consumer's that went silent), else a new one."""
        wait = check_timeout(timeout)
        claimed = await self._grouped(
            lambda: self.client.xautoclaim(
                self.stream, GROUP, self.consumer, self.min_idle_ms, "0-0", count=1
            )
        )
        for entry in claimed[1]:
            if entry and entry[1]:  # an entry deleted from the stream has no fields
                return _job(entry)
        block = None if wait <= 0 else max(1, round(wait * 1000))
        read = await self._grouped(
            lambda: self.client.xreadgroup(GROUP, self.consumer, {self.stream: ">"}, count=1, block=block)
        )
        for entry in _entries(list(read.values()) if isinstance(read, dict) else read or []):
            return _job(entry)
        return None

    async def ack(self, job: Any) -> bool:
        """Done with `job`: it leaves the group's pending list and is never delivered again."""
        return bool(await self.client.xack(self.stream, GROUP, text(job)))

    async def _grouped(self, command: Command) -> Any:
        """`command()` awaited, making the stream and its group first if they are not there yet."""
        try:
            return await command()
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
        try:
            await self.client.xgroup_create(self.stream, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        return await command()

    def __repr__(self) -> str:
        return f"<AsyncStreamQueue {self.name!r} lease={self.lease_ms}ms claims after {self.min_idle_ms}ms>"


def _job(entry: Any) -> tuple[str, Any]:
    entry_id, fields = entry
    if not isinstance(fields, dict):  # a flat [field, value, ...] list
        fields = dict(zip(fields[::2], fields[1::2], strict=True))
    return text(entry_id), loads(fields.get(b"item", fields.get("item")))


def factory(client: redis.asyncio.Redis, name: str, **kwargs: Any) -> AsyncStreamQueue:
    """The queue-protocol factory of the async stream queue (claims after 1.1 leases)."""
    return AsyncStreamQueue(client, name, **kwargs)


def short_claim_factory(
    client: redis.asyncio.Redis, name: str, *, lease_ms: int = 30_000
) -> AsyncStreamQueue:
    """Known-bad: the same queue claiming jobs idle for half a lease, shorter than a consumer may
    take to process one."""
    return AsyncStreamQueue(client, name, lease_ms=lease_ms, min_idle_ms=max(1, lease_ms // 2))
