"""KNOWN-BAD: transfers by one script (as `impl.transactions.lua`), audits by one GET per account
(read skew).

A transfer that runs between two of the audit's GETs is half seen: the money
it moved is counted twice or not at all, a total no serial order produces.
`audit_multi` is its correct twin: the same GETs inside one MULTI/EXEC.
"""

from __future__ import annotations

from collections.abc import Iterable

from contend.impl.transactions.bank import check_accounts, whole
from contend.impl.transactions.lua import LuaBank


class SeparateReadsBank(LuaBank):
    strategy = "audit_separate_reads"

    def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        names = check_accounts(accounts)
        return {n: whole(n, self.client.get(self.keys.account(n))) for n in names}
