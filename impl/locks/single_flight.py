"""Single-flight: one caller computes, concurrent callers of the same key share its result.

`ExclusiveAccess` is seed 001's version, kept as published: `SET key true NX
EX 2`; the winner runs the block and DELs the key, the others poll EXISTS
every 0.1 s until the key is gone. The result travels through process memory
(the post's `$answer` hash), which `SharedMemoryFlight` reproduces.
Known flaws, kept on purpose: waiters in another process never see the
result; a leader that raises or dies leaves its waiters to time out of the
loop when the TTL ends and return nothing, with no error; a leader slower than
the TTL lets a second caller lead too, and waiters return before the result.

`SingleFlight` does it right. One script per poll reads the result, or makes
the caller leader (`SET <key>:lock NX PX`), or says wait. The leader renews its
lease while it computes and lands the result in Redis (`<key>:result`, with a
TTL) and frees the lock in one script, so waiters in any process receive it.
If the leader raises, waiters receive LeaderFailedError. If it dies, its lease
runs out and a waiter leads in its place. Waiting is bounded by
`wait_timeout`, after which SingleFlightTimeout is raised: never a hang, never
a silent empty result. A result stays readable for `result_ttl_ms`, so callers
arriving just after a flight reuse it instead of computing again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import random
import secrets
import threading
import time
from collections.abc import Callable
from typing import Any

import redis

from contend.impl.locks.errors import LeaderFailedError, SingleFlightTimeout
from contend.impl.locks.lease import COMPARE_AND_DELETE, COMPARE_AND_PEXPIRE
from contend.impl.locks.validation import (
    check_key,
    check_seconds,
    check_timeout,
    check_ttl_ms,
    check_ttl_seconds,
    seconds_to_ms,
)

_VALUE = b"v"
_ERROR = b"e"


def digest(values: Any) -> str:
    """The post's key: the MD5 hex digest of the inputs' text form."""
    return hashlib.md5(repr(values).encode(), usedforsecurity=False).hexdigest()


class ExclusiveAccess:
    """Seed 001: the caller that sets the key runs the block; the others wait while the key exists."""

    def __init__(self, client: redis.Redis, key: str, expires_in: float = 2, poll_sec: float = 0.1) -> None:
        self.client = client
        self.key = check_key(key)
        self.ttl_ms = seconds_to_ms(check_ttl_seconds(expires_in, "expires_in"), "expires_in")
        self.poll_sec = check_seconds(poll_sec, "poll_sec")

    def call(self, block: Callable[[], object]) -> None:
        """Run `block` if we win the key, else wait until the key is gone. Returns nothing."""
        if self.client.set(self.key, "true", nx=True, px=self.ttl_ms):
            block()
            self.client.delete(self.key)
        else:
            while self.client.exists(self.key):
                time.sleep(self.poll_sec)


class SharedMemoryFlight:
    """The post's usage of ExclusiveAccess: `unless $answer[key] ... end; $answer[key]`.

    `answers` is the process memory the result travels through; each object
    gets its own dict (a process of its own) unless one is passed in.
    """

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        ttl_ms: int,
        *,
        answers: dict[str, Any] | None = None,
        poll_sec: float = 0.1,
    ) -> None:
        self.access = ExclusiveAccess(client, key, check_ttl_ms(ttl_ms) / 1000, poll_sec)
        self.key = self.access.key
        self.answers: dict[str, Any] = {} if answers is None else answers

    def call(self, fn: Callable[[], Any]) -> Any:
        """The shared answer, or None if it never reached this process's memory."""
        if self.key not in self.answers:
            self.access.call(lambda: self.answers.__setitem__(self.key, fn()))
        return self.answers.get(self.key)


class SingleFlight:
    """Concurrent `call(fn)`s on one key: one runs `fn`, all get its result or its error."""

    # KEYS[1]: lock, KEYS[2]: result. ARGV[1]: token, ARGV[2]: lease_ms.
    # {'result', payload} when a result is there, {'lead', ''} when we took the lock, else {'wait', ''}.
    FLIGHT = """
    local result = redis.call('GET', KEYS[2])
    if result then
        return {'result', result}
    end
    if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
        return {'lead', ''}
    end
    return {'wait', ''}
    """
    # KEYS[1]: lock, KEYS[2]: result. ARGV[1]: token, ARGV[2]: payload, ARGV[3]: ttl_ms.
    # Publishes the payload and frees the lock; 0 (nothing written) when a successor leader holds it:
    # that one publishes its own.
    LAND = """
    local holder = redis.call('GET', KEYS[1])
    if holder and holder ~= ARGV[1] then
        return 0
    end
    redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
    if holder then
        redis.call('DEL', KEYS[1])
    end
    return 1
    """
    # KEYS[1]: lock. ARGV[1]: token, ARGV[2]: lease_ms. The leader keeps its lease while computing.
    RENEW = COMPARE_AND_PEXPIRE
    # KEYS[1]: lock. ARGV[1]: token. A leader that gives up frees the key if it still holds it.
    ABANDON = COMPARE_AND_DELETE

    def __init__(
        self,
        client: redis.Redis,
        key: str,
        *,
        lease_ms: int = 10_000,
        wait_timeout: float = 30.0,
        result_ttl_ms: int = 60_000,
        error_ttl_ms: int = 1_000,
        poll_interval: float = 0.005,
        max_poll_interval: float = 0.1,
        renew: bool = True,
        dumps: Callable[[Any], str | bytes] = json.dumps,
        loads: Callable[[bytes], Any] = json.loads,
    ) -> None:
        self.client = client
        self.key = check_key(key)
        self.lock_key = f"{self.key}:lock"
        self.result_key = f"{self.key}:result"
        self.lease_ms = check_ttl_ms(lease_ms, "lease_ms")
        timeout = check_timeout(wait_timeout)
        if timeout is None:
            raise ValueError("wait_timeout is required: waiting for a leader must be bounded")
        self.wait_timeout = timeout
        self.result_ttl_ms = check_ttl_ms(result_ttl_ms, "result_ttl_ms")
        self.error_ttl_ms = check_ttl_ms(error_ttl_ms, "error_ttl_ms")
        self.poll_interval = check_seconds(poll_interval, "poll_interval")
        self.max_poll_interval = max(
            self.poll_interval, check_seconds(max_poll_interval, "max_poll_interval")
        )
        self.renew = renew
        self.dumps = dumps
        self.loads = loads
        self._flight = client.register_script(self.FLIGHT)
        self._land = client.register_script(self.LAND)
        self._renew = client.register_script(self.RENEW)
        self._abandon = client.register_script(self.ABANDON)

    def call(self, fn: Callable[[], Any]) -> Any:
        """`fn()` run once across all concurrent callers of this key; its result, or its error."""
        deadline = time.monotonic() + self.wait_timeout
        pause = self.poll_interval
        while True:
            token = secrets.token_hex(16)
            state, payload = self._flight(keys=[self.lock_key, self.result_key], args=[token, self.lease_ms])
            state = state.decode() if isinstance(state, bytes) else state
            if state == "result":
                return self._unpack(payload.encode() if isinstance(payload, str) else payload)
            if state == "lead":
                return self._lead(fn, token)
            now = time.monotonic()
            if now >= deadline:
                raise SingleFlightTimeout(
                    f"flight {self.key!r}: no result within {self.wait_timeout} s and the leader "
                    "still holds its lease (it is slow, or stuck while renewing)"
                )
            time.sleep(min(random.uniform(pause / 2, pause), deadline - now))
            pause = min(pause * 2, self.max_poll_interval)

    def forget(self) -> None:
        """Drop a stored result so the next call computes again."""
        self.client.delete(self.result_key)

    def _lead(self, fn: Callable[[], Any], token: str) -> Any:
        stop = threading.Event()
        renewer = None
        if self.renew:
            renewer = threading.Thread(target=self._keep_lease, args=(token, stop), daemon=True)
            renewer.start()
        try:
            value = fn()
        except Exception as exc:
            self._stop(stop, renewer)
            error = json.dumps({"type": type(exc).__name__, "message": str(exc)}).encode()
            self._land(keys=[self.lock_key, self.result_key], args=[token, _ERROR + error, self.error_ttl_ms])
            raise
        except BaseException:
            # Interrupted (KeyboardInterrupt, SystemExit): free the lock so a waiter leads now.
            self._stop(stop, renewer)
            self._abandon(keys=[self.lock_key], args=[token])
            raise
        self._stop(stop, renewer)
        packed = self.dumps(value)
        packed = packed.encode() if isinstance(packed, str) else packed
        self._land(keys=[self.lock_key, self.result_key], args=[token, _VALUE + packed, self.result_ttl_ms])
        return value

    def _keep_lease(self, token: str, stop: threading.Event) -> None:
        """Renew the lease every third of it until told to stop or the lease is lost."""
        while not stop.wait(self.lease_ms / 3000):
            try:
                if not self._renew(keys=[self.lock_key], args=[token, self.lease_ms]):
                    return
            except BaseException:
                return  # the connection is gone: let the lease run out, as if we had died

    @staticmethod
    def _stop(stop: threading.Event, renewer: threading.Thread | None) -> None:
        stop.set()
        if renewer is not None:
            with contextlib.suppress(RuntimeError):
                renewer.join()

    def _unpack(self, payload: bytes) -> Any:
        kind, body = payload[:1], payload[1:]
        if kind == _ERROR:
            error = json.loads(body)
            raise LeaderFailedError(
                f"flight {self.key!r}: the leader raised {error['type']}: {error['message']}"
            )
        return self.loads(body)


def factory(client: redis.Redis, key: str, ttl_ms: int, **kwargs: Any) -> SingleFlight:
    """The single-flight protocol factory: `ttl_ms` is the leader's lease."""
    return SingleFlight(client, key, lease_ms=ttl_ms, **kwargs)


def exclusive_access_factory(client: redis.Redis, key: str, ttl_ms: int, **kwargs: Any) -> SharedMemoryFlight:
    """The single-flight protocol over seed 001's ExclusiveAccess (each object a process of its own)."""
    return SharedMemoryFlight(client, key, ttl_ms, **kwargs)
