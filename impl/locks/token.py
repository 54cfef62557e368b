"""The correct single-instance lease: SET NX PX with a random token.

Acquire is `SET key token NX PX ttl`; release and extend are Lua scripts that
compare the token first, so a client whose lease expired can never delete or
prolong the lease of the client that holds the key now, and is told so with
LockNotOwnedError. A blocking acquire retries with jittered backoff until a
timeout measured on the monotonic clock. Each step is one round trip, sent
without redis-py's automatic retry (see `impl.roundtrip`): a connection
error surfaces, and the outcome of that step is unknown.
Release, extend and the blocking acquire come from `impl.locks.lease.ScriptedLease`.

What it does not give: protection for a holder that pauses longer than its TTL
(another client may then hold the lock too). `impl.locks.fenced` adds fencing
tokens for that.
"""

from __future__ import annotations

import secrets
from types import TracebackType
from typing import Any

import redis

from contend.impl.locks.errors import LockTimeoutError
from contend.impl.locks.lease import COMPARE_AND_DELETE, COMPARE_AND_PEXPIRE, ScriptedLease
from contend.impl.roundtrip import LuaScript, call


class TokenLock(ScriptedLease):
    """A lease on `key` for `ttl_ms` milliseconds. One object per holder; not thread-shared."""

    RELEASE = LuaScript(COMPARE_AND_DELETE)
    EXTEND = LuaScript(COMPARE_AND_PEXPIRE)

    def try_acquire(self) -> bool:
        """One attempt, one round trip: SET key token NX PX ttl."""
        token = secrets.token_hex(16)
        if call(self.client, "SET", self.key, token, "NX", "PX", self.ttl_ms) is not None:
            self.token = token
            return True
        return False

    def locked(self) -> bool:
        """Does anyone hold the key right now?"""
        return bool(self.client.exists(self.key))

    def __enter__(self) -> TokenLock:
        if not self.acquire():
            raise LockTimeoutError(f"lock {self.key!r}: could not acquire")
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "held" if self.token else "not held"
        return f"<{type(self).__name__} {self.key!r} ttl={self.ttl_ms}ms {state}>"


def factory(client: redis.Redis, key: str, ttl_ms: int, **kwargs: Any) -> TokenLock:
    """The lock-protocol factory."""
    return TokenLock(client, key, ttl_ms, **kwargs)
