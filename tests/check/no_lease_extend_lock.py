"""no_lease_lock with an extend: a holder's token-checked "extend" that leaves the lock as it is
(there is no lease to prolong). Its leases never run out, so the expiry and stale-extend checks
meet no successor to harm: used by test_lock_faults to see them say "not exercised"."""

from __future__ import annotations

import redis

from tests.check.no_lease_lock import NoLeaseLock


class NoLeaseExtendLock(NoLeaseLock):
    def extend(self, ttl_ms: int) -> bool:
        if ttl_ms <= 0:
            raise ValueError("ttl_ms must be > 0")
        return self.client.get(self.key) == self.token.encode()


def make(client: redis.Redis, key: str, ttl_ms: int) -> NoLeaseExtendLock:
    """The lock-protocol factory."""
    return NoLeaseExtendLock(client, key, ttl_ms)
