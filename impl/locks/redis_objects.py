"""Seed 004: the redis-objects gem's lock: SETNX an expiry time, GET, GETSET, and a careful release.

`RedisObjectsLock(client, key, timeout=5, expiration=None).lock(block)` runs
`block` under the lock, like the gem's `lock(&block)`:

1. SETNX key <now + expiration>: set means locked.
2. Else, with an expiration, GET the value; if it is in the past, GETSET a new
   expiry, and if the old value GETSET returned is in the past too, nobody
   beat us to it: locked.
3. Else sleep 0.1 s and try again, until `timeout` seconds have passed
   (`timeout=0`: one try), then raise LockTimeout.
4. After the block, DEL the key only if our expiry has not passed: a slow
   holder never deletes a successor's lock (unlike a plain DEL).

The clock (`clock`, default `time.time`) and `sleep` are injectable so skew
and expiry can be tested. (The gem adds a one-second margin to the expiry;
the post does not show it and neither does this port.)

Known flaws, kept on purpose:

* Expiry is judged by each client's wall clock: a client whose clock runs
  ahead takes a live lock by GETSET, and two clients hold it.
* A loser's GETSET overwrites the holder's expiry with its own.
* The key has no Redis TTL; with `expiration=None` (the gem's default) a
  crashed holder's lock is never taken again.
* The release compares times, not owners: a holder paused between its clock
  check and its DEL still deletes a successor's lock.
"""

from __future__ import annotations

from collections.abc import Callable
from types import TracebackType
from typing import Any, TypeVar

import redis

from contend.impl.locks import clock as clock_module
from contend.impl.locks.errors import LockError, LockNotOwnedError, LockTimeoutError
from contend.impl.locks.polling import poll_acquire
from contend.impl.locks.validation import check_key, check_seconds, check_ttl_ms, check_ttl_seconds

T = TypeVar("T")


class LockTimeout(LockTimeoutError):
    """The gem's Redis::Lock::LockTimeout: the lock was not taken within `timeout`."""


class RedisObjectsLock:
    """The gem's Redis::Lock: the value is the holder's expiry time on its own clock."""

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        *,
        timeout: float = 5,
        expiration: float | None = None,
        retry_sleep: float = 0.1,
        clock: Callable[[], float] = clock_module.wall_clock,
        sleep: Callable[[float], None] = clock_module.sleep,
    ) -> None:
        self.redis = client
        self.key = check_key(key)
        self.timeout = check_seconds(timeout, "timeout")
        self.expiration = None if expiration is None else check_ttl_seconds(expiration, "expiration")
        self.retry_sleep = check_seconds(retry_sleep, "retry_sleep")
        self.clock = clock
        self.sleep = sleep
        self._expiration: float | None = None  # the value we wrote; None while not held

    def lock(self, block: Callable[[], T]) -> T:
        """Run `block` holding the lock; LockTimeout if it is not taken within `timeout`."""
        self._acquire_until_timeout()
        try:
            return block()
        finally:
            self.unlock()

    def __enter__(self) -> RedisObjectsLock:
        self._acquire_until_timeout()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.unlock()

    def _acquire_until_timeout(self) -> None:
        if self._expiration is not None:
            raise LockError(f"lock {self.key!r}: lock() while this object already holds it")
        if self.timeout == 0:
            if self.try_lock():
                return
        else:
            start = self.clock()
            while self.clock() - start < self.timeout:
                if self.try_lock():
                    return
                self.sleep(self.retry_sleep)
        raise LockTimeout(f"Timeout on lock {self.key} exceeded {self.timeout} sec")

    def generate_expiration(self) -> float:
        """The value a holder writes: its expiry time, or 1 when the lock never expires."""
        return 1.0 if self.expiration is None else self.clock() + self.expiration

    def try_lock(self) -> bool:
        """One pass of the gem's loop body: SETNX, else GET and maybe GETSET."""
        expiration = self.generate_expiration()
        if self.redis.setnx(self.key, repr(expiration)):
            self._expiration = expiration
            return True
        if self.expiration is not None:
            old_expiration = _to_f(self.redis.get(self.key))
            if old_expiration < self.clock():
                expiration = self.generate_expiration()
                old_expiration = _to_f(self.redis.getset(self.key, repr(expiration)))
                if old_expiration < self.clock():
                    self._expiration = expiration
                    return True
        return False

    def unlock(self) -> bool:
        """The gem's `ensure`: DEL only if our expiry has not passed; True if it deleted."""
        expiration = self._expiration
        if expiration is None:
            raise LockNotOwnedError(f"lock {self.key!r}: unlock() on a lock this object does not hold")
        self._expiration = None
        if self.expiration is None or expiration > self.clock():
            self.redis.delete(self.key)
            return True
        return False

    @property
    def held(self) -> bool:
        """Does this object believe it holds the lock?"""
        return self._expiration is not None


def _to_f(value: Any) -> float:
    """Ruby's `.to_f`: nil and garbage become 0.0."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return 0.0


class RedisObjectsLease:
    """The lock protocol over RedisObjectsLock: acquire polls `try_lock`, release is its `ensure`."""

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        ttl_ms: int,
        *,
        clock: Callable[[], float] = clock_module.wall_clock,
    ) -> None:
        ttl = check_ttl_ms(ttl_ms)
        self.lock = RedisObjectsLock(client, key, timeout=0, expiration=ttl / 1000, clock=clock)

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lock; with `blocking`, retry until `timeout` seconds (None: no limit)."""
        if self.lock.held:
            raise LockError(f"lock {self.lock.key!r}: acquire() while this object already holds it")
        return poll_acquire(self.lock.try_lock, blocking=blocking, timeout=timeout)

    def release(self) -> None:
        """DEL unless our expiry passed (then a no-op); LockNotOwnedError if never acquired."""
        self.lock.unlock()


def factory(
    client: redis.Redis,
    key: str,
    ttl_ms: int,
    *,
    clock: Callable[[], float] = clock_module.wall_clock,
    **kwargs: Any,
) -> RedisObjectsLease:
    """The lock-protocol factory; `clock` is the client's wall clock (skew it to test)."""
    return RedisObjectsLease(client, key, ttl_ms, clock=clock, **kwargs)
