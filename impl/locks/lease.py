"""What a lease held through one object shares: a random token naming the holder, a blocking
acquire that polls one attempt, and release and extend by scripts that check the token first.

`ScriptedLease` is the base of the token lock, the fenced lock and both
semaphores. A subclass writes `try_acquire()` (one attempt that sets
`self.token` when it wins) and sets the RELEASE and EXTEND scripts, which are
called with KEYS = `script_keys` and ARGV = [token] or [token, ttl_ms] and
return 0 when the token no longer holds the lease (expired, or taken).
"""

from __future__ import annotations

from typing import ClassVar

import redis

from contend.impl.locks.errors import LockError, LockNotOwnedError
from contend.impl.locks.polling import poll_acquire
from contend.impl.locks.validation import check_key, check_ttl_ms
from contend.impl.roundtrip import LuaScript

# KEYS[1]: the lock key. ARGV[1]: the holder's token.
# Deletes the key only while it still holds that token; 1 if deleted, else 0.
COMPARE_AND_DELETE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
"""

# KEYS[1]: the lock key. ARGV[1]: the holder's token, ARGV[2]: the new TTL in ms.
# Resets the TTL only while the key still holds that token; 1 if reset, else 0.
COMPARE_AND_PEXPIRE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0
"""


class ScriptedLease:
    """A lease on `key` for `ttl_ms` milliseconds; one object is one holder, not thread-shared."""

    #: How messages name it ("lock", "semaphore"), what one holds, and what a failed release found.
    kind: ClassVar[str] = "lock"
    held_thing: ClassVar[str] = "a lock"
    lost: ClassVar[str] = "the lease gone or held by another client"
    RELEASE: ClassVar[LuaScript]
    EXTEND: ClassVar[LuaScript]

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        ttl_ms: int,
        *,
        retry_interval: float = 0.005,
        max_retry_interval: float = 0.05,
    ) -> None:
        self.client = client
        self.key = check_key(key)
        self.ttl_ms = check_ttl_ms(ttl_ms)
        self.retry_interval = retry_interval
        self.max_retry_interval = max_retry_interval
        self.token: str | None = None

    @property
    def script_keys(self) -> list[str]:
        """KEYS of the RELEASE and EXTEND scripts."""
        return [self.key]

    def try_acquire(self) -> bool:
        """One attempt; sets `token` and returns True when it wins."""
        raise NotImplementedError

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lease; with `blocking`, retry until `timeout` seconds (None: no limit)."""
        self._not_held("acquire")
        return poll_acquire(
            self.try_acquire,
            blocking=blocking,
            timeout=timeout,
            retry_interval=self.retry_interval,
            max_retry_interval=self.max_retry_interval,
        )

    def release(self) -> None:
        """Give the lease back; LockNotOwnedError if it is no longer ours."""
        token = self._held("release")
        self.token = None
        if not self.RELEASE(self.client, self.script_keys, [token]):
            raise LockNotOwnedError(
                f"{self.kind} {self.key!r}: release() found {self.lost} "
                f"(it expired after {self.ttl_ms} ms or was taken)"
            )

    def extend(self, ttl_ms: int | None = None) -> bool:
        """Reset the lease to `ttl_ms` from now (default: the TTL); LockNotOwnedError if lost."""
        ttl = self.ttl_ms if ttl_ms is None else check_ttl_ms(ttl_ms)
        token = self._held("extend")
        if not self.EXTEND(self.client, self.script_keys, [token, ttl]):
            self.token = None
            raise LockNotOwnedError(f"{self.kind} {self.key!r}: extend() found {self.lost}")
        return True

    def _held(self, action: str) -> str:
        if self.token is None:
            raise LockNotOwnedError(
                f"{self.kind} {self.key!r}: {action}() on {self.held_thing} this object does not hold"
            )
        return self.token

    def _not_held(self, action: str) -> None:
        if self.token is not None:
            raise LockError(
                f"{self.kind} {self.key!r}: {action}() while this object already holds {self.held_thing}; "
                "release() first or use a second object"
            )
