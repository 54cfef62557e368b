"""What every bank shares: the key layout, input checks, opening accounts and the audit.

    <namespace>:{<bank>}:acct:<account>   string, the account's balance (a whole number)

The braces make Redis Cluster hash only `<bank>`, so every account of one bank
shares a slot and MULTI/EXEC and scripts over several accounts stay legal there.
An account exists once `open` wrote it; a transfer moves a whole amount > 0
from one existing account to another and refuses (returns False, writes
nothing) when the source holds less than the amount.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import redis


class TransferError(ValueError):
    """Bad input to a bank (an amount <= 0, an unknown or repeated account): nothing was written."""


class UnknownAccount(TransferError):
    """An account that was never opened."""


class InsufficientFunds(Exception):
    """Not raised by transfer (which returns False); kept for callers that want an exception."""


class RetriesExhausted(Exception):
    """An optimistic strategy lost every race it was allowed to retry: nothing was written."""


@dataclass(frozen=True)
class BankKeys:
    """Key names of one bank."""

    namespace: str
    bank: str = "bank"

    def account(self, name: str) -> str:
        prefix = f"{self.namespace}:" if self.namespace else ""
        return f"{prefix}{{{self.bank}}}:acct:{name}"

    def lock(self, name: str) -> str:
        """The lock-first strategy's lock over one account."""
        return self.account(name) + ":lock"


def check_account(name: Any) -> str:
    if not isinstance(name, str) or not name:
        raise TransferError(f"an account is a non-empty str, got {name!r}")
    return name


def check_amount(amount: Any) -> int:
    if isinstance(amount, bool) or not isinstance(amount, int):
        raise TransferError(f"an amount is a whole number, got {amount!r}")
    if amount <= 0:
        raise TransferError(f"an amount must be > 0, got {amount}")
    return amount


def check_transfer(src: Any, dst: Any, amount: Any) -> tuple[str, str, int]:
    """The arguments of a transfer, checked before anything is sent."""
    src, dst, amount = check_account(src), check_account(dst), check_amount(amount)
    if src == dst:
        raise TransferError(f"a transfer needs two accounts, got {src!r} twice")
    return src, dst, amount


def check_accounts(accounts: Any) -> list[str]:
    if isinstance(accounts, str | bytes) or not isinstance(accounts, Iterable):
        raise TransferError(f"balances takes a list of accounts, got {accounts!r}")
    names = [check_account(a) for a in accounts]
    if not names:
        raise TransferError("balances needs at least one account")
    return names


def whole(name: str, value: Any) -> int:
    """A balance read from Redis; UnknownAccount when the key does not exist."""
    if value is None:
        raise UnknownAccount(f"no account called {name!r} (open it first)")
    return int(value)


class Bank:
    """Base: `transfer` is the strategy's; `balances` reads every account in one MULTI/EXEC."""

    strategy = "base"

    def __init__(self, client: redis.Redis, namespace: str, *, bank: str = "bank") -> None:
        self.client = client
        self.keys = BankKeys(namespace, bank)
        #: EXEC aborts seen so far (each one a retry), for load reports.
        self.conflicts = 0

    def open(self, account: str, balance: int) -> None:
        """Create `account` holding `balance` (>= 0), or set it if it exists (setup, not a transfer)."""
        if isinstance(balance, bool) or not isinstance(balance, int) or balance < 0:
            raise TransferError(f"an opening balance is a whole number >= 0, got {balance!r}")
        self.client.set(self.keys.account(check_account(account)), balance)

    def transfer(self, src: str, dst: str, amount: int) -> bool:
        """Move `amount` from `src` to `dst`: True; False (nothing written) when `src` holds less."""
        raise NotImplementedError

    def balances(self, accounts: Iterable[str]) -> dict[str, int]:
        """Every account's balance, read in one MULTI/EXEC: a state some serial order produced."""
        names = check_accounts(accounts)
        with self.client.pipeline(transaction=True) as pipe:
            for name in names:
                pipe.get(self.keys.account(name))
            values = pipe.execute()
        return {n: whole(n, v) for n, v in zip(names, values, strict=True)}

    def _read_pair(self, reader: Any, src: str, dst: str) -> tuple[int, int]:
        a, b = reader.mget(self.keys.account(src), self.keys.account(dst))
        return whole(src, a), whole(dst, b)
