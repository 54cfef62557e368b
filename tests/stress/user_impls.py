"""Stand-ins for a user's own lock module, for `contend stress --impl` (see also tests/fixtures/)."""

from __future__ import annotations

import redis


class NeverGranted:
    """A lock whose every acquire is refused: no worker ever holds it, so a client pause that
    waits for a holder never happens."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int) -> None:
        self.client = client
        self.key = key

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        self.client.exists(self.key)
        return False

    def release(self) -> None:
        raise RuntimeError("not held")


def never_granted(client: redis.Redis, key: str, ttl_ms: int) -> NeverGranted:
    return NeverGranted(client, key, ttl_ms)


def no_release(client: redis.Redis, key: str, ttl_ms: int) -> object:
    """Returns an object with acquire but no release."""
    return type("Half", (), {"acquire": lambda self, blocking=True, timeout=None: True})()
