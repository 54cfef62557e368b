"""A two-key transfer in the spirit of Redis in Action's marketplace: move 1..100 between accounts.

Strategies: watch (WATCH both accounts, MGET, MULTI/EXEC, retried),
coarse_lock (one lock over every account), fine_locks (a lock per account,
taken in key order so two transfers never deadlock) and lua (one script).
`--hot-keys N` makes N+1 accounts (1: every transfer touches the same pair).
After the run the total must be conserved and no account below zero.
`--impl package.module:factory --kind lock` takes your own lock per account
instead (as fine_locks): a lock that lets two clients in loses or makes money.

    locust -f loadtests/transfer.py --headless -u 16 -r 16 -t 10s --strategy fine_locks
"""

from contend.load.harness import ContendUser


class TransferUser(ContendUser):
    workload = "transfer"
