"""KNOWN-BAD: WATCH only the account credited, not the one whose balance it checks (write skew).

It reads the source's balance to refuse an overdraft, then DECRBY/INCRBY in
MULTI/EXEC. Increments commute, so no money is made or lost; but two transfers
out of one account both see the balance that allows them, neither watched
that account, and both commit: the account goes below zero.
"""

from __future__ import annotations

from redis.exceptions import WatchError

from contend.impl.transactions.bank import Bank, RetriesExhausted, check_transfer
from contend.impl.transactions.watch import execute


class WatchSomeBank(Bank):
    strategy = "transfer_watch_some"
    max_retries = 100

    def transfer(self, src: str, dst: str, amount: int) -> bool:
        src, dst, amount = check_transfer(src, dst, amount)
        a, b = self.keys.account(src), self.keys.account(dst)
        for _ in range(self.max_retries):
            with self.client.pipeline(transaction=True) as pipe:
                try:
                    pipe.watch(b)
                    balance_a, _ = self._read_pair(pipe, src, dst)
                    if balance_a < amount:
                        return False
                    pipe.multi()
                    pipe.decrby(a, amount)
                    pipe.incrby(b, amount)
                    execute(pipe)
                    return True
                except WatchError:
                    self.conflicts += 1
        raise RetriesExhausted(f"watch-some bank: gave up moving {amount} from {src!r} to {dst!r}")
