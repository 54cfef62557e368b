"""Converting contend's milliseconds to what a library takes, exactly or not at all."""

from __future__ import annotations

import math
from typing import Any


def check_lease(key: Any, ttl_ms: Any) -> None:
    """The protocol's bad input: an empty key or ttl_ms <= 0 raises before anything is written."""
    if not isinstance(key, str | bytes) or not key:
        raise ValueError(f"a lock needs a non-empty key, got {key!r}")
    if isinstance(ttl_ms, bool) or not isinstance(ttl_ms, int) or ttl_ms <= 0:
        raise ValueError(f"ttl_ms must be a whole number of milliseconds > 0, got {ttl_ms!r}")


def seconds_truncated_to(ttl_ms: int) -> float:
    """Seconds `s` with int(s * 1000) == ttl_ms: for libraries that send int(seconds * 1000) ms,
    which truncates (1.001 s would become 1000 ms): `s` is nudged up by ULPs until it does not."""
    seconds = ttl_ms / 1000
    while int(seconds * 1000) < ttl_ms:
        seconds = math.nextafter(seconds, math.inf)
    return seconds


def whole_seconds(ttl_ms: int) -> int:
    """ttl_ms as whole seconds, for libraries that take int seconds; ValueError if it is not one
    (the factory declares ttl_resolution_ms = 1000, so contend only asks for whole seconds)."""
    if ttl_ms % 1000:
        raise ValueError(
            f"this library holds leases in whole seconds; {ttl_ms} ms is not a whole number of them"
        )
    return ttl_ms // 1000


def check_limiter(key: Any, limit: Any, window_ms: Any) -> None:
    """The rate-limiter protocol's bad input: an empty key, limit < 1 or window_ms <= 0 raises
    before anything is written."""
    if not isinstance(key, str | bytes) or not key:
        raise ValueError(f"a rate limiter needs a non-empty key, got {key!r}")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise ValueError(f"limit must be a whole number >= 1, got {limit!r}")
    if isinstance(window_ms, bool) or not isinstance(window_ms, int) or window_ms <= 0:
        raise ValueError(f"window_ms must be a whole number of milliseconds > 0, got {window_ms!r}")


def window_seconds(window_ms: int) -> int:
    """window_ms as whole seconds, for limiters whose windows are whole seconds (the battery's and
    the machine's windows are); ValueError if it is not a whole number of them."""
    if window_ms % 1000:
        raise ValueError(
            f"this library's windows are whole seconds; {window_ms} ms is not a whole number of them"
        )
    return window_ms // 1000
