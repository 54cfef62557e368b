"""Optimistic WATCH/MULTI/EXEC: watch both accounts, read them, write both in MULTI.

A transfer costs WATCH, MGET and one MULTI/EXEC block; when another client
changes either account in between, EXEC aborts and the attempt is retried after
a jittered, exponentially growing pause, at most `max_retries` times.
The audit WATCHes the accounts, reads them one by one and ends with an empty
MULTI/EXEC: EXEC succeeds only if none changed, so the reads are one state.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable

import redis
from redis.exceptions import WatchError

from contend.impl.transactions.bank import Bank, RetriesExhausted, check_accounts, check_transfer, whole


class Indeterminate(redis.ConnectionError):
    """The connection dropped at EXEC: the transfer may or may not have been applied."""


class WatchBank(Bank):
    strategy = "watch"

    def __init__(
        self,
        client: redis.Redis,
        namespace: str,
        *,
        bank: str = "bank",
        max_retries: int = 100,
        backoff_base: float = 0.0005,
        backoff_cap: float = 0.02,
    ) -> None:
        super().__init__(client, namespace, bank=bank)
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_cap = backoff_cap

    def _pause(self, attempt: int) -> None:
        if attempt:
            time.sleep(random.uniform(0, min(self.backoff_cap, self.backoff_base * 2 ** min(attempt, 16))))

    def transfer(self, src: str, dst: str, amount: int) -> bool:
        src, dst, amount = check_transfer(src, dst, amount)
        a, b = self.keys.account(src), self.keys.account(dst)
        for attempt in range(self.max_retries):
            self._pause(attempt)
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(a, b)
                    balance_a, balance_b = self._read_pair(pipe, src, dst)
                    if balance_a < amount:
                        return False
                    pipe.multi()
                    pipe.set(a, balance_a - amount)
                    pipe.set(b, balance_b + amount)
                    execute(pipe)
                    return True
                except WatchError:
                    self.conflicts += 1
        raise RetriesExhausted(
            f"watch bank: gave up moving {amount} from {src!r} to {dst!r} after {self.max_retries} "
            "attempts, each aborted by another client changing one of them"
        )

    def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        names = check_accounts(accounts)
        for attempt in range(self.max_retries):
            self._pause(attempt)
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(*(self.keys.account(n) for n in names))
                    values = [pipe.get(self.keys.account(n)) for n in names]
                    pipe.multi()
                    execute(pipe)  # empty: it only says whether a watched account changed
                    return {n: whole(n, v) for n, v in zip(names, values, strict=True)}
                except WatchError:
                    self.conflicts += 1
        raise RetriesExhausted(f"watch bank: gave up auditing after {self.max_retries} attempts")


def execute(pipe: redis.client.Pipeline) -> list[object]:
    """EXEC. redis-py reports a connection lost at EXEC as a WatchError, as if the EXEC had aborted;
    it may have run: that is no conflict to retry (a retry could move the money twice)."""
    try:
        return pipe.execute()
    except WatchError as exc:
        if "Error occurred" in str(exc) or "occurred while watching" in str(exc):
            raise Indeterminate(f"the connection dropped at EXEC; it may have run: {exc}") from exc
        raise
