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


def check_ttl_seconds(seconds: Any, what: str = "expire") -> float:
    """A seed-style TTL in seconds: a positive number (whole or not)."""
    if seconds is None:
        raise ValueError(f"{what} is required: a lease needs a positive TTL in seconds")
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise ValueError(f"{what} must be a number of seconds, got {seconds!r}")
    if not seconds > 0:
        raise ValueError(
            f"{what} must be > 0 seconds, got {seconds}: Redis deletes a key whose TTL is <= 0 at once"
        )
    return float(seconds)


def seconds_to_ms(seconds: float, what: str = "expire") -> int:
    """Whole milliseconds for PX/PEXPIRE; a TTL under 1 ms is refused, not rounded to 0."""
    ms = round(seconds * 1000)
    if ms <= 0:
        raise ValueError(f"{what} of {seconds} s is under a millisecond")
    return ms


def check_count(value: Any, what: str, minimum: int = 1) -> int:
    """A whole number >= minimum (retry counts, semaphore limits)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what} must be a whole number, got {value!r}")
    if value < minimum:
        raise ValueError(f"{what} must be >= {minimum}, got {value}")
    return value


def check_seconds(value: Any, what: str) -> float:
    """A duration in seconds >= 0 (sleeps, poll intervals)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise ValueError(f"{what} must be a number of seconds >= 0, got {value!r}")
    return float(value)
