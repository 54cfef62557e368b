"""Multi-key transactions (issue 28): a bank that moves money between accounts and audits them.

Every strategy keeps the layout of `impl.transactions.bank` and answers
`open`, `transfer` and `balances`; they differ in how a transfer and an audit
are isolated from the others (WATCH, lock-first, Lua, or not at all).
"""

from contend.impl.transactions.bank import (
    Bank,
    BankKeys,
    InsufficientFunds,
    RetriesExhausted,
    TransferError,
    UnknownAccount,
)
from contend.impl.transactions.lock_first import LockFirstBank
from contend.impl.transactions.lua import LuaBank
from contend.impl.transactions.no_watch import NoWatchBank
from contend.impl.transactions.separate_reads import SeparateReadsBank
from contend.impl.transactions.watch import WatchBank
from contend.impl.transactions.watch_some import WatchSomeBank

__all__ = [
    "Bank",
    "BankKeys",
    "InsufficientFunds",
    "LockFirstBank",
    "LuaBank",
    "NoWatchBank",
    "RetriesExhausted",
    "SeparateReadsBank",
    "TransferError",
    "UnknownAccount",
    "WatchBank",
    "WatchSomeBank",
]
