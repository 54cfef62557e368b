"""KNOWN-BAD: read both balances, then write both in MULTI/EXEC, with no WATCH (lost update).

MULTI/EXEC makes the two writes atomic, but the values written were computed
from reads another client's transfer can overwrite in between: two transfers
from one account both read the old balance, and one debit is lost (money made).
"""

from __future__ import annotations

from contend.impl.transactions.bank import Bank, check_transfer


class NoWatchBank(Bank):
    strategy = "transfer_no_watch"

    def transfer(self, src: str, dst: str, amount: int) -> bool:
        src, dst, amount = check_transfer(src, dst, amount)
        balance_a, balance_b = self._read_pair(self.client, src, dst)
        if balance_a < amount:
            return False
        with self.client.pipeline(transaction=True) as pipe:
            pipe.set(self.keys.account(src), balance_a - amount)
            pipe.set(self.keys.account(dst), balance_b + amount)
            pipe.execute()
        return True
