"""A stream queue: XADD to put, XREADGROUP in one consumer group to take, XACK to ack, and
XAUTOCLAIM to take over a job whose consumer has been silent for longer than the lease.

Keys (one hash slot): `stream`, with the consumer group `workers` (made on first use). Each
queue object is a consumer of its own in the group. A take first asks XAUTOCLAIM for one pending
job idle for at least `min_idle_ms`, then reads a new one (XREADGROUP ... >, blocking up to the
timeout). The lease is the idle time: a job is claimed by another consumer only once it has sat
unacked for `min_idle_ms` since it was delivered, so `min_idle_ms` must be at least `lease_ms`.
`StreamQueue` claims after 1.1 leases; the known-bad `short_claim_factory` after half of one, so a
consumer still inside its lease sees its job handed to another.
"""

from __future__ import annotations

import uuid
from typing import Any

import redis

from contend.impl.queue.base import check_lease_ms, check_name, check_timeout, dumps, keys_of, loads, text

GROUP = "workers"


class StreamQueue:
    """At-least-once jobs on a stream and its consumer group."""

    def __init__(
        self, client: redis.Redis, name: str, *, lease_ms: int = 30_000, min_idle_ms: int | None = None
    ) -> None:
        self.client = client
        self.name = check_name(name)
        self.lease_ms = check_lease_ms(lease_ms)
        self.min_idle_ms = check_lease_ms(
            min_idle_ms if min_idle_ms is not None else lease_ms + lease_ms // 10
        )
        (self.stream,) = keys_of(self.name, "stream")
        self.consumer = f"c-{uuid.uuid4().hex[:12]}"

    def put(self, item: Any) -> str:
        """Queue `item` (a JSON value); its entry id."""
        return text(self.client.xadd(self.stream, {"item": dumps(item)}))

    def take(self, timeout: float) -> tuple[str, Any] | None:
        """A job idle past min_idle_ms (another consumer's that went silent), else a new one."""
        wait = check_timeout(timeout)
        claimed = self._grouped(
            lambda: self.client.xautoclaim(
                self.stream, GROUP, self.consumer, self.min_idle_ms, "0-0", count=1
            )
        )
        for entry in claimed[1]:
            if entry and entry[1]:  # an entry deleted from the stream has no fields
                return self._job(entry)
        block = None if wait <= 0 else max(1, round(wait * 1000))
        read = self._grouped(
            lambda: self.client.xreadgroup(GROUP, self.consumer, {self.stream: ">"}, count=1, block=block)
        )
        for entry in _entries(list(read.values()) if isinstance(read, dict) else read or []):
            return self._job(entry)
        return None

    def ack(self, job: Any) -> bool:
        """Done with `job`: it leaves the group's pending list and is never delivered again."""
        return bool(self.client.xack(self.stream, GROUP, text(job)))

    def _grouped(self, command: Any) -> Any:
        """`command()`, making the stream and its group first if they are not there yet."""
        try:
            return command()
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
        try:
            self.client.xgroup_create(self.stream, GROUP, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise
        return command()

    @staticmethod
    def _job(entry: Any) -> tuple[str, Any]:
        entry_id, fields = entry
        if not isinstance(fields, dict):  # a flat [field, value, ...] list
            fields = dict(zip(fields[::2], fields[1::2], strict=True))
        payload = fields.get(b"item", fields.get("item"))
        return text(entry_id), loads(payload)

    def __repr__(self) -> str:
        return f"<StreamQueue {self.name!r} lease={self.lease_ms}ms claims after {self.min_idle_ms}ms>"


def factory(client: redis.Redis, name: str, **kwargs: Any) -> StreamQueue:
    """The queue-protocol factory of the stream queue (claims after 1.1 leases)."""
    return StreamQueue(client, name, **kwargs)


def short_claim_factory(client: redis.Redis, name: str, *, lease_ms: int = 30_000) -> StreamQueue:
    """Known-bad: the same queue claiming jobs idle for half a lease, shorter than a consumer may
    take to process one."""
    return StreamQueue(client, name, lease_ms=lease_ms, min_idle_ms=max(1, lease_ms // 2))


def _entries(reply: Any) -> list[Any]:
    """The (id, fields) entries in a stream reply, however redis-py nested them (RESP2 gives
    [[stream, [entries]]], RESP3 {stream: [[entries]]})."""
    pair = isinstance(reply, list | tuple) and len(reply) == 2 and isinstance(reply[0], bytes | str)
    if pair and isinstance(reply[1], dict | list | tuple) and not _is_stream_name(reply):
        return [reply]
    if isinstance(reply, list | tuple):
        return [entry for part in reply for entry in _entries(part)]
    return []


def _is_stream_name(pair: Any) -> bool:
    """[stream name, entries] rather than [entry id, fields]: entry ids are `<ms>-<seq>`."""
    first = pair[0].decode() if isinstance(pair[0], bytes) else pair[0]
    head, _, tail = first.partition("-")
    return not (head.isdigit() and tail.isdigit())
