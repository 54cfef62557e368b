"""What the catalog's queues share: checked arguments, items as JSON, and the keys of a name.

Every queue here follows the queue protocol: `factory(client, name)` returns an object with
`put(item) -> id`, `take(timeout) -> (id, item) | None` and `ack(id)`, and says in `lease_ms`
how long a take keeps its item from every other consumer (None: it never gives an item out
twice). Arguments are refused before anything is written.
"""

from __future__ import annotations

import json
from typing import Any


class QueueError(Exception):
    """Base class: something went wrong with a queue."""


class BadItem(QueueError, ValueError):
    """An item the queue cannot carry: it is not a JSON value."""


def check_name(name: Any) -> str:
    """A queue's name must be a non-empty str (or UTF-8 bytes)."""
    if isinstance(name, bytes):
        try:
            name = name.decode()
        except UnicodeDecodeError:
            raise ValueError(f"queue name {name!r} is not valid UTF-8") from None
    if not isinstance(name, str):
        raise ValueError(f"queue name must be a string, got {type(name).__name__}")
    if not name:
        raise ValueError("queue name must not be empty")
    return name


def check_timeout(timeout: Any) -> float:
    """How long a take may wait: a number of seconds >= 0 (0: do not wait)."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout != timeout:
        raise ValueError(f"take timeout must be a number of seconds >= 0, got {timeout!r}")
    if timeout < 0:
        raise ValueError(f"take timeout must be >= 0 seconds, got {timeout}")
    return float(timeout)


def check_lease_ms(lease_ms: Any) -> int:
    """A visibility lease: a whole number of milliseconds > 0."""
    if isinstance(lease_ms, bool) or not isinstance(lease_ms, int) or lease_ms <= 0:
        raise ValueError(f"lease_ms must be a whole number of milliseconds > 0, got {lease_ms!r}")
    return lease_ms


def dumps(item: Any) -> str:
    """The item as JSON text; BadItem (before anything is sent) if it is not a JSON value."""
    try:
        return json.dumps(item, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise BadItem(f"cannot put {type(item).__name__} item: not a JSON value ({exc})") from None


def loads(payload: Any) -> Any:
    """An item back from its JSON text (bytes or str)."""
    return json.loads(payload.decode() if isinstance(payload, bytes) else payload)


def text(value: Any) -> str:
    """A reply (bytes or str) as str: ids are handed out as str."""
    return value.decode() if isinstance(value, bytes) else str(value)


def keys_of(name: str, *suffixes: str) -> list[str]:
    """The queue's keys, `<name>:<suffix>`, in one hash slot: a name without a hash tag becomes
    one (`{name}:ready`), one that has a tag keeps it (every key then shares it)."""
    base = name if "{" in name and "}" in name.split("{", 1)[1] else "{" + name + "}"
    return [f"{base}:{suffix}" for suffix in suffixes]
