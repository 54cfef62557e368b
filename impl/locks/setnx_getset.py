"""Seed 002: a mutex on SETNX + GETSET whose value is the holder's expiry time (client clock).

The algorithm of the old SETNX documentation ("Design pattern: Locking with
SETNX"), with the post's API: `Mutex(client, key, expire=10, retry_count=6,
retry_setnx_count=100, retry_sleep_sec=0.25)`, `lock()`, `unlock()`, `with`,
decorator use, and the post's exception classes. Ported to Python 3; the
clock (`clock`, default `time.time`) and `sleep` are injectable so clock skew
and expiry can be tested without waiting.

1. SETNX key <now + expire>: set means locked.
2. Else GET the expiry; still in the future: sleep and go to 1.
3. Else GETSET key <now + expire>; the old value expired: locked (nobody
   beat us to the GETSET). Still valid: someone did; sleep and go to 1.

Known flaws, kept on purpose (the catalog lists which checks catch them):

* Expiry is judged by each client's wall clock. A client whose clock runs
  ahead sees a live lock as expired and takes it by GETSET: two holders.
* The key has no Redis TTL. A crashed holder's key stays until a contender
  replaces it, and a loser's GETSET overwrites the holder's expiry with its own.
* `unlock()` checks the elapsed time on the local clock, then DELs without
  asking whose lock it is; a holder paused between the two, or with a slow
  clock, deletes another client's lock.
* After ExpiredLockError the object still believes it holds the lock (the
  post's test resets `_lock` by hand), and one Mutex used as a decorator
  raises DuplicateLockError for a second concurrent caller in the same process
  instead of waiting.

Unlike the post, a missing or non-positive `expire` is refused with ValueError.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

import redis

from contend.impl.locks import clock as clock_module
from contend.impl.locks import errors
from contend.impl.locks.polling import poll_acquire
from contend.impl.locks.validation import (
    check_count,
    check_key,
    check_seconds,
    check_ttl_ms,
    check_ttl_seconds,
)

P = ParamSpec("P")
R = TypeVar("R")


class MutexError(errors.LockError):
    """Base of the post's exceptions; `key` names the mutex."""

    def __init__(self, key: str, message: str = "") -> None:
        self.key = key
        super().__init__(f"mutex {key!r}: {message}" if message else f"mutex {key!r}")


class DuplicateLockError(MutexError):
    """lock() on a Mutex object that already holds the lock; unlock() first or use another object."""

    def __init__(self, key: str) -> None:
        super().__init__(key, "lock() while this Mutex already holds it; unlock() first or use another Mutex")


class HasNotLockError(MutexError, errors.LockNotOwnedError):
    """unlock() on a Mutex object whose lock() has not succeeded."""

    def __init__(self, key: str) -> None:
        super().__init__(key, "unlock() without a successful lock()")


class ExpiredLockError(MutexError, errors.LockNotOwnedError):
    """unlock() after the lock's expire had passed (by this client's clock); nothing was deleted."""

    def __init__(self, key: str, elapsed_time: float) -> None:
        self.elapsed_time = elapsed_time
        super().__init__(key, f"unlock() {elapsed_time:.3f} s after lock(): the lock had expired")


class SetnxError(MutexError):
    """SETNX failed and the key vanished before GET, retry_setnx_count times in a row."""

    def __init__(self, key: str) -> None:
        super().__init__(key, "SETNX kept failing while the key kept vanishing")


class LockError(MutexError, errors.LockTimeoutError):
    """lock() gave up after retry_count rounds."""

    def __init__(self, key: str) -> None:
        super().__init__(key, "could not lock: held by another client")


class Mutex:
    """The post's Mutex: expiry timestamps on SETNX/GETSET, judged by the client clock."""

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        expire: float = 10,
        retry_count: int = 6,  # retry_count * retry_sleep_sec = the longest wait
        retry_setnx_count: int = 100,
        retry_sleep_sec: float = 0.25,
        *,
        clock: Callable[[], float] = clock_module.wall_clock,
        sleep: Callable[[float], None] = clock_module.sleep,
    ) -> None:
        self._lock: float | None = None
        self._r = client
        self._key = check_key(key)
        self._expire = check_ttl_seconds(expire)
        self._retry_count = check_count(retry_count, "retry_count")
        self._retry_setnx_count = check_count(retry_setnx_count, "retry_setnx_count")
        self._retry_sleep_sec = check_seconds(retry_sleep_sec, "retry_sleep_sec")
        self._clock = clock
        self._sleep = sleep

    @property
    def held(self) -> bool:
        """Does this object believe it holds the lock?"""
        return self._lock is not None

    def _get_now(self) -> float:
        return self._clock()

    def lock(self) -> None:
        """Take the lock or raise LockError after retry_count rounds."""
        if self._lock is not None:
            raise DuplicateLockError(self._key)
        self._do_lock()

    def _do_lock(self) -> None:
        for _ in range(self._retry_count):
            is_set, old_expire = self._setnx()
            if is_set:
                self._lock = self._get_now()
                return
            if self._need_retry(old_expire):
                continue
            if not self._need_retry(self._getset()):
                self._lock = self._get_now()
                return
        raise LockError(self._key)

    def _setnx(self) -> tuple[bool, float]:
        for _ in range(self._retry_setnx_count):
            if self._r.setnx(self._key, repr(self._get_now() + self._expire)):
                return True, 0.0
            old_expire = self._r.get(self._key)
            if old_expire is not None:
                return False, float(old_expire)
        raise SetnxError(self._key)

    def _need_retry(self, expire: float) -> bool:
        if expire < self._get_now():
            return False
        self._sleep(self._retry_sleep_sec)
        return True

    def _getset(self) -> float:
        old_expire = self._r.getset(self._key, repr(self._get_now() + self._expire))
        return 0.0 if old_expire is None else float(old_expire)

    def unlock(self) -> None:
        """DEL the key; ExpiredLockError (and no DEL) if expire has passed since lock()."""
        if self._lock is None:
            raise HasNotLockError(self._key)
        elapsed_time = self._get_now() - self._lock
        if self._expire <= elapsed_time:
            raise ExpiredLockError(self._key, elapsed_time)
        self._r.delete(self._key)
        self._lock = None

    def __enter__(self) -> Mutex:
        self.lock()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._lock is not None:
            self.unlock()

    def __call__(self, func: Callable[P, R]) -> Callable[P, R]:
        """Use the Mutex as a decorator: each call runs under `with self`."""

        @wraps(func)
        def inner(*args: P.args, **kwargs: P.kwargs) -> R:
            with self:
                return func(*args, **kwargs)

        return inner

    def __repr__(self) -> str:
        return f"<Mutex {self._key!r} expire={self._expire}s {'held' if self.held else 'not held'}>"


class MutexLease:
    """The lock protocol over a Mutex: one lock() round per attempt, polled until the timeout."""

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        ttl_ms: int,
        *,
        clock: Callable[[], float] = clock_module.wall_clock,
        retry_interval: float = 0.005,
        max_retry_interval: float = 0.05,
    ) -> None:
        ttl = check_ttl_ms(ttl_ms)
        self.mutex = Mutex(client, key, expire=ttl / 1000, retry_count=1, retry_sleep_sec=0, clock=clock)
        self.retry_interval = retry_interval
        self.max_retry_interval = max_retry_interval

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lock; with `blocking`, retry until `timeout` seconds (None: no limit)."""
        if self.mutex.held:
            raise DuplicateLockError(self.mutex._key)
        return poll_acquire(
            self._attempt,
            blocking=blocking,
            timeout=timeout,
            retry_interval=self.retry_interval,
            max_retry_interval=self.max_retry_interval,
        )

    def _attempt(self) -> bool:
        try:
            self.mutex.lock()
        except LockError:
            return False
        return True

    def release(self) -> None:
        """unlock(); HasNotLockError or ExpiredLockError (both LockNotOwnedError) when not held."""
        try:
            self.mutex.unlock()
        except ExpiredLockError:
            self.mutex._lock = None
            raise


def factory(
    client: redis.Redis,
    key: str,
    ttl_ms: int,
    *,
    clock: Callable[[], float] = clock_module.wall_clock,
    **kwargs: Any,
) -> MutexLease:
    """The lock-protocol factory; `clock` is the client's wall clock (skew it to test)."""
    return MutexLease(client, key, ttl_ms, clock=clock, **kwargs)
