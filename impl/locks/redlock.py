"""Redlock as published (redis.io, "Distributed Locks with Redis"), over N independent masters.

Acquire: one random token; `SET key token NX PX ttl` on every master in turn, each its own
round trip, a master that errors counting as a refusal. The lock is held when a majority
(N // 2 + 1) said OK and the validity left, `ttl - elapsed - drift` with
`drift = ttl * 0.01 + 2 ms`, is still positive; otherwise it is released on every master
(the ones that said OK, and any whose answer was lost) and, when blocking, retried after a
random delay. Release and extend are the compare-and-delete and compare-and-pexpire
scripts, on every master; extend holds when a majority extended it within the validity.

What the algorithm assumes, and contend's state machine breaks on purpose
(`contend.machines.redlock`): a master that restarts keeps its keys (persistence with
fsync always) or stays down for longer than a TTL. One that comes back empty while its
lease is live lets a second client win a majority: Martin Kleppmann's counterexample.
"""

from __future__ import annotations

import contextlib
import random
import secrets
import time
import weakref
from collections.abc import Callable, Sequence

import redis

from contend.impl.locks.errors import LockError, LockNotOwnedError
from contend.impl.locks.lease import COMPARE_AND_DELETE, COMPARE_AND_PEXPIRE
from contend.impl.locks.validation import check_key, check_timeout, check_ttl_ms
from contend.impl.roundtrip import LuaScript, call

#: The clock drift allowed for, as a fraction of the TTL (the published 0.01), plus 2 ms.
CLOCK_DRIFT_FACTOR = 0.01
DRIFT_MS = 2


class Redlock:
    """A lock on `key` over `masters` (independent redis-py clients, an odd number is usual)."""

    RELEASE = LuaScript(COMPARE_AND_DELETE)
    EXTEND = LuaScript(COMPARE_AND_PEXPIRE)

    def __init__(
        self,
        masters: Sequence[redis.Redis],
        key: str,
        ttl_ms: int,
        *,
        retry_delay: float = 0.02,
    ) -> None:
        if not masters:
            raise ValueError("Redlock needs at least one master")
        self.masters = list(masters)
        self.key = check_key(key)
        self.ttl_ms = check_ttl_ms(ttl_ms)
        self.quorum = len(self.masters) // 2 + 1
        self.retry_delay = retry_delay
        self.token: str | None = None
        #: Monotonic time until which the lock is surely held (set by acquire and extend).
        self.valid_until = 0.0

    def try_acquire(self) -> bool:
        """One attempt: SET NX PX on every master, then judge quorum and validity."""
        token = secrets.token_hex(16)
        start = time.monotonic()
        won = sum(1 for m in self.masters if self._set(m, token))
        validity_ms = self.ttl_ms - (time.monotonic() - start) * 1000 - self._drift_ms()
        if won >= self.quorum and validity_ms > 0:
            self.token = token
            self.valid_until = start + validity_ms / 1000
            return True
        self._release_everywhere(token)
        return False

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        """Take the lock; with `blocking`, retry after a random delay until `timeout` s."""
        if self.token is not None:
            raise LockError(f"Redlock {self.key!r}: acquire() while this object holds it; release() first")
        timeout = check_timeout(timeout)
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if self.try_acquire():
                return True
            now = time.monotonic()
            if not blocking or (deadline is not None and now >= deadline):
                return False
            pause = random.uniform(self.retry_delay / 2, self.retry_delay)
            time.sleep(pause if deadline is None else min(pause, deadline - now))

    def release(self) -> None:
        """Compare-and-delete on every master. LockNotOwnedError when the lock may have been lost:
        its validity had run out and fewer than a majority of masters still held it (a copy left
        on a minority is no lock; another client may hold the majority by now)."""
        if self.token is None:
            raise LockNotOwnedError(f"Redlock {self.key!r}: release() of a lock this object does not hold")
        token, self.token = self.token, None
        valid = time.monotonic() < self.valid_until
        freed = self._release_everywhere(token)
        if not valid and freed < self.quorum:
            raise LockNotOwnedError(
                f"Redlock {self.key!r}: release() after its validity ran out found the lease on "
                f"{freed} of {len(self.masters)} masters, fewer than a majority"
            )

    def extend(self, ttl_ms: int | None = None) -> bool:
        """Compare-and-pexpire on every master; held when a majority did it within the validity."""
        if self.token is None:
            raise LockNotOwnedError(f"Redlock {self.key!r}: extend() of a lock this object does not hold")
        ttl = self.ttl_ms if ttl_ms is None else check_ttl_ms(ttl_ms)
        start = time.monotonic()
        done = sum(1 for m in self.masters if self._extend(m, self.token, ttl))
        validity_ms = ttl - (time.monotonic() - start) * 1000 - self._drift_ms(ttl)
        if done >= self.quorum and validity_ms > 0:
            self.valid_until = start + validity_ms / 1000
            return True
        self.token = None
        raise LockNotOwnedError(
            f"Redlock {self.key!r}: extend() reached {done} of {len(self.masters)} masters"
        )

    def _drift_ms(self, ttl_ms: int | None = None) -> float:
        return (self.ttl_ms if ttl_ms is None else ttl_ms) * CLOCK_DRIFT_FACTOR + DRIFT_MS

    def _set(self, master: redis.Redis, token: str) -> bool:
        try:
            return call(master, "SET", self.key, token, "NX", "PX", self.ttl_ms) is not None
        except redis.RedisError:
            return False  # down or unreachable: no vote

    def _extend(self, master: redis.Redis, token: str, ttl_ms: int) -> bool:
        try:
            return bool(self.EXTEND(master, [self.key], [token, ttl_ms]))
        except redis.RedisError:
            return False

    def _release_everywhere(self, token: str) -> int:
        """Compare-and-delete on every master; how many still held `token`."""
        freed = 0
        for master in self.masters:
            with contextlib.suppress(redis.RedisError):  # down: its copy expires with its TTL
                freed += int(self.RELEASE(master, [self.key], [token]))
        return freed


def factory_over(others: Sequence[str]) -> Callable[[redis.Redis, str, int], Redlock]:
    """A lock factory `(client, key, ttl_ms)` over the client's server plus the servers at the URLs
    `others` (the other masters): contend's lock protocol with Redlock's masters. Locks made with
    one client of the first master share that client's clients of the others, as the locks of one
    process of a real deployment do; another client gets its own."""
    urls = list(others)
    # Per client of the first master, its clients of the others: made once, like a process's.
    clients_of: weakref.WeakKeyDictionary[redis.Redis, list[redis.Redis]] = weakref.WeakKeyDictionary()

    def factory(client: redis.Redis, key: str, ttl_ms: int) -> Redlock:
        extra = clients_of.get(client)
        if extra is None:
            extra = [redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2) for url in urls]
            clients_of[client] = extra
        return Redlock([client, *extra], key, ttl_ms)

    factory.__name__ = f"redlock_{1 + len(urls)}"
    return factory
