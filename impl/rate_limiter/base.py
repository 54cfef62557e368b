"""Argument checks every limiter makes before it talks to Redis."""

from __future__ import annotations

from typing import Any


def check_args(key: Any, limit: Any, window_ms: Any) -> tuple[str, int, int]:
    """ValueError unless `key` is a non-empty string, `limit` a whole number >= 1 and `window_ms`
    a whole number > 0 (PEXPIRE with 0 or less deletes the key at once: a window that never was)."""
    if isinstance(key, bytes):
        key = key.decode()
    if not isinstance(key, str) or not key:
        raise ValueError(f"rate limiter key must be a non-empty string, got {key!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a whole number >= 1, got {limit!r}")
    if isinstance(window_ms, bool) or not isinstance(window_ms, int) or window_ms <= 0:
        raise ValueError(f"window_ms must be a whole number of milliseconds > 0, got {window_ms!r}")
    return key, limit, window_ms


def check_cost(cost: Any, limit: int) -> int:
    """A hit costs a whole number >= 1 (a cost above `limit` is refused, never admitted)."""
    if isinstance(cost, bool) or not isinstance(cost, int) or cost < 1:
        raise ValueError(f"cost must be a whole number >= 1, got {cost!r}")
    return cost
