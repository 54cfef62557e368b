"""Argument checks every lock makes before it talks to Redis."""

from __future__ import annotations

from typing import Any


def check_key(key: Any) -> str:
    """A lock key must be a non-empty str (or UTF-8 bytes)."""
    if isinstance(key, bytes):
        try:
            key = key.decode()
        except UnicodeDecodeError:
            raise ValueError(f"lock key {key!r} is not valid UTF-8") from None
    if not isinstance(key, str):
        raise ValueError(f"lock key must be a string, got {type(key).__name__}")
    if not key:
        raise ValueError("lock key must not be empty")
    return key


def check_ttl_ms(ttl_ms: Any, what: str = "ttl_ms") -> int:
    """A lease needs a positive whole number of milliseconds.

    EXPIRE/PEXPIRE with a value <= 0 deletes the key at once, so a lock taken
    with such a TTL would silently not exist: refuse it before Redis sees it.
    """
    if ttl_ms is None:
        raise ValueError(f"{what} is required: a lease needs a positive TTL in milliseconds")
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int):
        raise ValueError(f"{what} must be a whole number of milliseconds, got {ttl_ms!r}")
    if ttl_ms <= 0:
        raise ValueError(f"{what} must be > 0, got {ttl_ms}: Redis deletes a key whose TTL is <= 0 at once")
    return ttl_ms


def check_timeout(timeout: Any) -> float | None:
    """None waits without end; otherwise a number of seconds >= 0."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise ValueError(f"timeout must be a number of seconds or None, got {timeout!r}")
    if timeout < 0:
        raise ValueError(f"timeout must be >= 0 seconds, got {timeout}")
    return float(timeout)
