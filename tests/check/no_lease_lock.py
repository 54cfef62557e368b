"""A lock without a lease, as a task queue's lock is (huey's `lock_task` without ttl): SET NX with
no expiry and a token-checked release. It keeps a dead holder's lock for ever, which is what it
claims; used by test_claims_follow to see that crash liveness is judged only when claimed."""

from __future__ import annotations

import uuid

import redis

# KEYS[1]: the lock. ARGV[1]: the holder's token. 1 if it was this holder's and is now deleted.
RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"


class NoLeaseLock:
    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        if not key or ttl_ms <= 0:
            raise ValueError("a lock needs a key and ttl_ms > 0")
        self.client, self.key, self.token = client, key, uuid.uuid4().hex
        self.release_script = client.register_script(RELEASE)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        return bool(self.client.set(self.key, self.token, nx=True))

    def release(self) -> None:
        self.release_script(keys=[self.key], args=[self.token])


def make(client: redis.Redis, key: str, ttl_ms: int) -> NoLeaseLock:
    """The lock-protocol factory."""
    return NoLeaseLock(client, key, ttl_ms)
