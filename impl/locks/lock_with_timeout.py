"""KNOWN-BAD: seed 003's locks: `get_lock`/`rel_lock` (SETNX a uuid, DEL) and `lock_with_timeout`.

`lock_with_timeout` (Redis in Action's listing, as the post gives it) is SETNX
then EXPIRE in two round trips, and a loser that finds the lock without a TTL
is meant to add one. Ported to Python 3 with the post's evident intent (its
`lockname`/`lock_timeout` names are undefined as printed).

Known flaws, kept on purpose:

* A holder that crashes between SETNX and EXPIRE leaves a lock with no TTL.
  The repair branch tests `not conn.ttl(lockname)`; redis-py >= 3 returns -1
  for "no TTL" (redis-py 2 returned None), so the test is never true, the
  repair never runs, and nobody can take the lock again.
* Release is a plain DEL of whatever is there (the uuid is never compared): a
  holder that outlived its TTL deletes its successor's lock.
* `get_lock` sets no TTL at all: a crashed holder blocks everyone for ever.
"""

from __future__ import annotations

import uuid
from typing import Any

import redis

from contend.impl.locks.polling import PollingLock
from contend.impl.locks.validation import check_key, check_ttl_ms, check_ttl_seconds, seconds_to_ms


def get_lock(conn: redis.Redis, name: str, *, prefix: str = "lock:") -> bool:
    """SETNX lock:<name> <uuid>, no TTL: True if taken."""
    return bool(conn.setnx(prefix + check_key(name), str(uuid.uuid4())))


def rel_lock(conn: redis.Redis, name: str, *, prefix: str = "lock:") -> bool:
    """DEL lock:<name>, whoever holds it."""
    conn.delete(prefix + check_key(name))
    return True


def lock_with_timeout(conn: redis.Redis, name: str, timeout: float = 10, *, prefix: str = "lock:") -> bool:
    """SETNX lock:<name>, then EXPIRE it `timeout` seconds (a second round trip): True if taken."""
    ttl_ms = seconds_to_ms(check_ttl_seconds(timeout, "timeout"), "timeout")
    return _setnx_then_expire(conn, prefix + check_key(name), ttl_ms)


def _setnx_then_expire(conn: redis.Redis, lockname: str, ttl_ms: int) -> bool:
    if conn.setnx(lockname, str(uuid.uuid4())):
        conn.pexpire(lockname, ttl_ms)
        return True
    elif not conn.pttl(lockname):  # -1 ("no TTL") is truthy: this repair never runs
        conn.pexpire(lockname, ttl_ms)
    return False


class TimeoutLock(PollingLock):
    """The lock protocol over `lock_with_timeout` and `rel_lock`, on `key` itself (no "lock:" prefix)."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        self.client = client
        self.key = check_key(key)
        self.ttl_ms = check_ttl_ms(ttl_ms)
        self.held = False

    def try_acquire(self) -> bool:
        """One lock_with_timeout: SETNX, then PEXPIRE."""
        self.held = _setnx_then_expire(self.client, self.key, self.ttl_ms)
        return self.held

    def _drop(self) -> None:
        """rel_lock: DEL the key (whoever holds it by now)."""
        rel_lock(self.client, self.key, prefix="")


def factory(client: redis.Redis, key: str, ttl_ms: int, **kwargs: Any) -> TimeoutLock:
    """The lock-protocol factory."""
    return TimeoutLock(client, key, ttl_ms, **kwargs)
