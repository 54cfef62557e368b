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
