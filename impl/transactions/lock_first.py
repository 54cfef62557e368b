"""Lock first, then read and write: a token lock per account, taken in key order.

A transfer takes both accounts' locks (SET NX PX with a token; in sorted order,
so two transfers never deadlock), reads both balances, writes both in one
MULTI/EXEC, then releases with compare-and-delete. If a holder stalls past the
lock's TTL another client may enter too: the TTL (default 10 s) must exceed any
transfer's duration.
"""

from __future__ import annotations

import redis

from contend.impl.locks.token import TokenLock
from contend.impl.transactions.bank import Bank, RetriesExhausted, check_transfer


class LockFirstBank(Bank):
    strategy = "lock_first"

    def __init__(
        self,
        client: redis.Redis,
        namespace: str,
        *,
        bank: str = "bank",
        ttl_ms: int = 10_000,
        timeout: float = 30.0,
    ) -> None:
        super().__init__(client, namespace, bank=bank)
        self.ttl_ms = ttl_ms
        self.timeout = timeout

    def transfer(self, src: str, dst: str, amount: int) -> bool:
        src, dst, amount = check_transfer(src, dst, amount)
        a, b = self.keys.account(src), self.keys.account(dst)
        locks: list[TokenLock] = []
        try:
            for name in sorted((src, dst)):
                lock = TokenLock(self.client, self.keys.lock(name), self.ttl_ms)
                if not lock.acquire(timeout=self.timeout):
                    raise RetriesExhausted(
                        f"lock-first bank: could not take {lock.key!r} within {self.timeout} s"
                    )
                locks.append(lock)
            # Read under the locks (an unknown account raises here; the locks are then released
            # and nothing is left written).
            balance_a, balance_b = self._read_pair(self.client, src, dst)
            if balance_a < amount:
                return False
            with self.client.pipeline(transaction=True) as pipe:
                pipe.set(a, balance_a - amount)
                pipe.set(b, balance_b + amount)
                pipe.execute()
            return True
        finally:
            for lock in reversed(locks):
                lock.release()
