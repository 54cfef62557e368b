"""Known-bad: a list queue of bare values whose ack removes by value.

The lists hold the items themselves (their JSON), so a job's id is its value, and a lease is a
key per value (`lease:<value>`, SET PX). The reaper requeues a value in processing whose lease
key is gone, once it has seen it so for a lease (as the reliable list queue does for an orphan).
The defect: ack is `LREM processing 0 value`, which removes every copy of the value. When the same
value was queued twice and two consumers hold a copy each, the first ack takes the second
consumer's copy with it: if that consumer then dies or gives its copy back, the job is lost.
"""

from __future__ import annotations

import secrets
import time
from typing import Any

import redis

from contend.impl.queue.base import check_lease_ms, check_name, check_timeout, dumps, keys_of, loads, text
from contend.impl.roundtrip import LuaScript

_NOW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
"""


class ValueQueue:
    """Values on lists; ack, extend and nack name a value."""

    # KEYS[1]: ready, KEYS[2]: processing, KEYS[3]: seen (sorted set: value -> first seen with no
    # lease). ARGV[1]: lease_ms, ARGV[2]: the lease keys' prefix. Requeues the values in processing
    # whose lease key has been gone for a lease; how many went back.
    REAP = LuaScript(
        _NOW
        + """
    local back = 0
    for _, value in ipairs(redis.call('LRANGE', KEYS[2], 0, -1)) do
        if redis.call('EXISTS', ARGV[2] .. value) == 1 then
            redis.call('ZREM', KEYS[3], value)
        else
            local seen = redis.call('ZSCORE', KEYS[3], value)
            if not seen then
                redis.call('ZADD', KEYS[3], now, value)
            elseif now - tonumber(seen) >= tonumber(ARGV[1]) then
                redis.call('LREM', KEYS[2], 1, value)
                redis.call('ZREM', KEYS[3], value)
                redis.call('RPUSH', KEYS[1], value)
                back = back + 1
            end
        end
    end
    return back
    """
    )
    # KEYS[1]: processing, KEYS[2]: the value's lease key. ARGV[1]: value, ARGV[2]: token,
    # ARGV[3]: lease_ms. 1 when the value is in processing and now leased to us, else 0.
    LEASE = LuaScript(
        """
    if not redis.call('LPOS', KEYS[1], ARGV[1]) then return 0 end
    redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
    return 1
    """
    )
    # KEYS[1]: processing, KEYS[2]: the value's lease key. ARGV[1]: value. Removes the value from
    # processing (every copy: the defect) and its lease; how many copies went.
    ACK = LuaScript(
        """
    redis.call('DEL', KEYS[2])
    return redis.call('LREM', KEYS[1], 0, ARGV[1])
    """
    )
    # KEYS[1]: the value's lease key. ARGV[1]: token, ARGV[2]: ms. 1 when the lease is ours and
    # now ends ARGV[2] ms from now, else 0.
    EXTEND = LuaScript(
        """
    if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
    redis.call('PEXPIRE', KEYS[1], ARGV[2])
    return 1
    """
    )
    # KEYS[1]: ready, KEYS[2]: processing, KEYS[3]: the value's lease key. ARGV[1]: value,
    # ARGV[2]: token. 1 when a copy was in processing and is back at the head of ready, else 0.
    NACK = LuaScript(
        """
    if redis.call('GET', KEYS[3]) == ARGV[2] then redis.call('DEL', KEYS[3]) end
    if redis.call('LREM', KEYS[2], 1, ARGV[1]) == 0 then return 0 end
    redis.call('RPUSH', KEYS[1], ARGV[1])
    return 1
    """
    )

    def __init__(self, client: redis.Redis, name: str, *, lease_ms: int = 30_000) -> None:
        self.client = client
        self.name = check_name(name)
        self.lease_ms = check_lease_ms(lease_ms)
        self.keys = keys_of(self.name, "ready", "processing", "seen")
        self.lease_prefix = keys_of(self.name, "lease:")[0]
        self.held: dict[str, str] = {}

    def put(self, item: Any) -> str:
        """Queue `item`; its id is its JSON text."""
        value = dumps(item)
        self.client.lpush(self.keys[0], value)
        return value

    def take(self, timeout: float) -> tuple[str, Any] | None:
        deadline = time.monotonic() + check_timeout(timeout)
        ready, processing, _ = self.keys
        while True:
            self.REAP(self.client, self.keys, [self.lease_ms, self.lease_prefix])
            left = deadline - time.monotonic()
            if left <= 0:
                moved = self.client.lmove(ready, processing, "RIGHT", "LEFT")
            else:
                moved = self.client.execute_command("BLMOVE", ready, processing, "RIGHT", "LEFT", left)
            if moved is None:
                return None
            value, token = text(moved), secrets.token_hex(8)
            if self.LEASE(
                self.client, [processing, self.lease_prefix + value], [value, token, self.lease_ms]
            ):
                self.held[value] = token
                return value, loads(value)
            if time.monotonic() >= deadline:
                return None

    def ack(self, value: Any) -> int:
        self.held.pop(text(value), None)
        return int(self.ACK(self.client, [self.keys[1], self.lease_prefix + text(value)], [text(value)]))

    def extend(self, value: Any, ms: int) -> bool:
        token = self.held.get(text(value))
        key = self.lease_prefix + text(value)
        return token is not None and bool(self.EXTEND(self.client, [key], [token, check_lease_ms(ms)]))

    def nack(self, value: Any) -> bool:
        token = self.held.pop(text(value), "")
        keys = [self.keys[0], self.keys[1], self.lease_prefix + text(value)]
        return bool(self.NACK(self.client, keys, [text(value), token]))


def factory(client: redis.Redis, name: str, **kwargs: Any) -> ValueQueue:
    """The queue-protocol factory of the value queue."""
    return ValueQueue(client, name, **kwargs)
