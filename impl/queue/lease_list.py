"""A reliable list queue: BLMOVE into a processing list, a lease per job, a reaper that checks it.

Keys (one hash slot): `ready` (job ids; put pushes on the left, take moves from the right),
`processing` (ids taken and not yet acked), `jobs` (hash: id -> the item as JSON), `leases`
(sorted set: id -> the lease's end in ms on the server's clock), `tokens` (hash: id -> the
token of its current delivery), `orphans` (sorted set: id -> when the reaper first found it in
`processing` with no lease), `ids` (the id counter).

A take is three round trips: the reaper (one script), BLMOVE ready -> processing (which may
block, so it cannot be in a script), and a script that leases the job it moved. A consumer that
dies between the last two leaves the job in `processing` with no lease: the reaper gives such a
job a lease's grace from when it first sees it, so a slow consumer's lease script still comes in
time, and a job whose lease ran out goes back at once. The lease script refuses a job that is no
longer in `processing` or already leased (it was requeued while we were paused): the take then
tries again. ack, extend and nack hold the delivery's token, so a consumer whose lease ran out and
whose job went to another can neither complete nor prolong it (they return False).

The known-bad variants keep all of this but one step: `BlindReaperQueue` requeues a job it saw in
`processing` at its previous sweep whatever its lease; `PeekThenRemoveQueue` reads the next id
with LRANGE and moves it with LREM in a second round trip whose count it ignores.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import redis

from contend.impl.queue.base import (
    check_lease_ms,
    check_name,
    check_timeout,
    dumps,
    keys_of,
    loads,
    text,
)
from contend.impl.roundtrip import LuaScript, call

# The server's clock in ms, as `now`: every script that reads time starts with it.
_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""
# Put job ARGV-named `id` back at the head of `ready` (the next take gets it): KEYS as REAP's.
_REQUEUE = """
local function requeue(id)
    redis.call('LREM', KEYS[2], 1, id)
    redis.call('ZREM', KEYS[3], id)
    redis.call('ZREM', KEYS[5], id)
    redis.call('HDEL', KEYS[4], id)
    redis.call('RPUSH', KEYS[1], id)
end
"""
#: The keys every script below takes, in this order.
SUFFIXES = ("ready", "processing", "leases", "tokens", "orphans", "jobs", "ids")


class LeaseListQueue:
    """At-least-once jobs on lists: a take holds its job for `lease_ms` unless it acks first."""

    # KEYS: ready, processing, leases, tokens, orphans, jobs, ids. ARGV[1]: the item as JSON.
    # The new job's id: INCR ids, HSET jobs, LPUSH ready, all at once.
    PUT = LuaScript(
        """
    local id = tostring(redis.call('INCR', KEYS[7]))
    redis.call('HSET', KEYS[6], id, ARGV[1])
    redis.call('LPUSH', KEYS[1], id)
    return id
    """
    )
    # KEYS: ready, processing, leases, tokens, orphans. ARGV[1]: lease_ms (an orphan's grace).
    # Requeues the jobs in processing whose lease ran out, and orphans (no lease: their taker died
    # before leasing them) once they have been seen for a lease; how many went back.
    REAP = LuaScript(
        _NOW
        + _REQUEUE
        + """
    local back = 0
    for _, id in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
        local ends = redis.call('ZSCORE', KEYS[3], id)
        if ends then
            if tonumber(ends) <= now then requeue(id); back = back + 1 end
        else
            local seen = redis.call('ZSCORE', KEYS[5], id)
            if not seen then
                redis.call('ZADD', KEYS[5], now, id)
            elseif now - tonumber(seen) >= tonumber(ARGV[1]) then
                requeue(id); back = back + 1
            end
        end
    end
    return back
    """
    )
    # KEYS: ready, processing, leases, tokens, orphans, jobs. ARGV[1]: id, ARGV[2]: token,
    # ARGV[3]: lease_ms. The item as JSON when the job is ours now, false if it is no longer in
    # processing or someone else leased it meanwhile.
    LEASE = LuaScript(
        _NOW
        + """
    if not redis.call('LPOS', KEYS[2], ARGV[1]) or redis.call('ZSCORE', KEYS[3], ARGV[1]) then
        return false
    end
    local item = redis.call('HGET', KEYS[6], ARGV[1])
    if not item then return false end
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[1])
    redis.call('HSET', KEYS[4], ARGV[1], ARGV[2])
    redis.call('ZREM', KEYS[5], ARGV[1])
    return item
    """
    )
    # KEYS: ready, processing, leases, tokens, orphans, jobs. ARGV[1]: id, ARGV[2]: token.
    # 1 when the delivery was still ours and the job is gone for good, else 0.
    ACK = LuaScript(
        """
    if redis.call('HGET', KEYS[4], ARGV[1]) ~= ARGV[2] then return 0 end
    redis.call('LREM', KEYS[2], 1, ARGV[1])
    redis.call('ZREM', KEYS[3], ARGV[1])
    redis.call('ZREM', KEYS[5], ARGV[1])
    redis.call('HDEL', KEYS[4], ARGV[1])
    redis.call('HDEL', KEYS[6], ARGV[1])
    return 1
    """
    )
    # KEYS: ready, processing, leases, tokens. ARGV[1]: id, ARGV[2]: token, ARGV[3]: ms.
    # 1 when the delivery was still ours and its lease now ends ARGV[3] ms from now, else 0.
    EXTEND = LuaScript(
        _NOW
        + """
    if redis.call('HGET', KEYS[4], ARGV[1]) ~= ARGV[2] then return 0 end
    redis.call('ZADD', KEYS[3], 'XX', now + tonumber(ARGV[3]), ARGV[1])
    return 1
    """
    )
    # KEYS: ready, processing, leases, tokens, orphans. ARGV[1]: id, ARGV[2]: token.
    # 1 when the delivery was still ours and the job is back at the head of ready, else 0.
    NACK = LuaScript(
        _REQUEUE
        + """
    if redis.call('HGET', KEYS[4], ARGV[1]) ~= ARGV[2] then return 0 end
    requeue(ARGV[1])
    return 1
    """
    )

    def __init__(
        self, client: redis.Redis, name: str, *, lease_ms: int = 30_000, poll_interval: float = 0.05
    ) -> None:
        self.client = client
        self.name = check_name(name)
        self.lease_ms = check_lease_ms(lease_ms)
        self.poll_interval = poll_interval
        self.keys = keys_of(self.name, *SUFFIXES)
        #: id -> the token of the delivery this consumer holds
        self.held: dict[str, str] = {}

    def put(self, item: Any) -> str:
        """Queue `item` (a JSON value); its job id. One round trip."""
        return text(self.PUT(self.client, self.keys, [dumps(item)]))

    def take(self, timeout: float) -> tuple[str, Any] | None:
        """The next job as (id, item), held for lease_ms; None if none came within `timeout` s."""
        deadline = time.monotonic() + check_timeout(timeout)
        while True:
            self.reap()
            left = deadline - time.monotonic()
            job = self.move(left)
            if job is None:
                return None
            token = secrets.token_hex(8)
            item = self.LEASE(self.client, self.keys, [job, token, self.lease_ms])
            if item is not None:
                self.held[job] = token
                return job, loads(item)
            if time.monotonic() >= deadline:
                return None  # it went back to the queue while we were paused: someone else's now

    def reap(self) -> None:
        """Requeue what lost its lease (one round trip)."""
        self.REAP(self.client, self.keys, [self.lease_ms])

    def move(self, timeout: float) -> str | None:
        """The next job id, moved to processing: at once, or waiting up to `timeout` s."""
        ready, processing = self.keys[:2]
        if timeout <= 0:
            moved = self.client.lmove(ready, processing, "RIGHT", "LEFT")
        else:
            moved = self.client.execute_command("BLMOVE", ready, processing, "RIGHT", "LEFT", timeout)
        return None if moved is None else text(moved)

    def ack(self, job: Any) -> bool:
        """Done with `job`: it is never delivered again. False if our lease on it was lost."""
        token = self.held.pop(text(job), None)
        return token is not None and bool(self.ACK(self.client, self.keys, [text(job), token]))

    def extend(self, job: Any, ms: int) -> bool:
        """Our lease on `job` now ends `ms` from now. False if it was lost."""
        token = self.held.get(text(job))
        return token is not None and bool(
            self.EXTEND(self.client, self.keys, [text(job), token, check_lease_ms(ms)])
        )

    def nack(self, job: Any) -> bool:
        """Give `job` back: the next take gets it. False if our lease on it was lost."""
        token = self.held.pop(text(job), None)
        return token is not None and bool(self.NACK(self.client, self.keys, [text(job), token]))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} lease={self.lease_ms}ms holding {len(self.held)}>"


class BlindReaperQueue(LeaseListQueue):
    """Known-bad: its reaper requeues a job seen in processing at its previous sweep too, without
    looking at the job's lease (the "stuck job" heuristic)."""

    # KEYS: ready, processing, leases, tokens, orphans. ARGV[1]: lease_ms (unused: the defect).
    # Requeues every job that was in processing at the previous sweep; marks the others.
    REAP = LuaScript(
        _NOW
        + _REQUEUE
        + """
    local back = 0
    for _, id in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
        if redis.call('ZSCORE', KEYS[5], id) then
            requeue(id); back = back + 1
        else
            redis.call('ZADD', KEYS[5], now, id)
        end
    end
    return back
    """
    )
    # As LEASE, but the lease leaves the sweep's mark in place (the reaper does not read leases).
    LEASE = LuaScript(
        _NOW
        + """
    if not redis.call('LPOS', KEYS[2], ARGV[1]) or redis.call('ZSCORE', KEYS[3], ARGV[1]) then
        return false
    end
    local item = redis.call('HGET', KEYS[6], ARGV[1])
    if not item then return false end
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[1])
    redis.call('HSET', KEYS[4], ARGV[1], ARGV[2])
    return item
    """
    )


class PeekThenRemoveQueue(LeaseListQueue):
    """Known-bad: a take that is not atomic. It reads the next id (LRANGE), then in a second round
    trip removes it (LREM), moves it to processing and leases it, whatever LREM removed."""

    # KEYS: ready, processing, leases, tokens, orphans, jobs. ARGV[1]: id, ARGV[2]: token,
    # ARGV[3]: lease_ms. Takes the job we peeked at; the item as JSON (false if it has no item).
    TAKE_PEEKED = LuaScript(
        _NOW
        + """
    redis.call('LREM', KEYS[1], 1, ARGV[1])
    redis.call('LPUSH', KEYS[2], ARGV[1])
    redis.call('ZADD', KEYS[3], now + tonumber(ARGV[3]), ARGV[1])
    redis.call('HSET', KEYS[4], ARGV[1], ARGV[2])
    return redis.call('HGET', KEYS[6], ARGV[1])
    """
    )

    def take(self, timeout: float) -> tuple[str, Any] | None:
        deadline = time.monotonic() + check_timeout(timeout)
        while True:
            self.reap()
            peeked = call(self.client, "LRANGE", self.keys[0], -1, -1)
            if peeked:
                job, token = text(peeked[0]), secrets.token_hex(8)
                item = self.TAKE_PEEKED(self.client, self.keys, [job, token, self.lease_ms])
                if item is not None:
                    self.held[job] = token
                    return job, loads(item)
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            time.sleep(min(self.poll_interval, left))


def factory(client: redis.Redis, name: str, **kwargs: Any) -> LeaseListQueue:
    """The queue-protocol factory of the reliable list queue."""
    return LeaseListQueue(client, name, **kwargs)


def blind_reaper_factory(client: redis.Redis, name: str, **kwargs: Any) -> BlindReaperQueue:
    return BlindReaperQueue(client, name, **kwargs)


def peek_then_remove_factory(client: redis.Redis, name: str, **kwargs: Any) -> PeekThenRemoveQueue:
    return PeekThenRemoveQueue(client, name, **kwargs)
