"""A bank: transfers between accounts and audits of them (issue 28, the transaction family).

The state is the tuple of (account, balance) pairs, sorted. `transfer` moves
an amount when the source holds at least that much (output True) and otherwise
changes nothing (False); `balances` reads accounts without changing them.
Three things follow for any history of a correct bank:

* money is conserved: the balances always add up to the opening total;
* each transfer applies once or not at all: the final balances are the
  opening ones plus the moves of the transfers that returned True and of some
  of those whose outcome is unknown, each at most once, none below zero;
* an audit of every account sees the opening total (a state some serial order produces).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

from contend.models.base import DeterministicModel

BankState = tuple[tuple[str, int], ...]
#: A transfer as the checks below take it: (source, destination, amount).
Move = tuple[str, str, int]
#: How many subsets of the transfers of unknown outcome `explain_final` tries before it gives up.
MAX_SUBSETS = 1 << 14


class BankModel(DeterministicModel[BankState]):
    """Operations: transfer((src, dst, amount)) -> bool, balances(accounts) -> tuple of balances."""

    name = "bank"

    def __init__(self, opening: Mapping[str, int] | None = None) -> None:
        self.opening = dict(opening or {})

    def init(self) -> BankState:
        return tuple(sorted(self.opening.items()))

    def apply(self, state: BankState, f: str, value: Any) -> tuple[Any, BankState]:
        balances = dict(state)
        if f == "transfer":
            src, dst, amount = value
            if balances[src] < amount:
                return False, state
            balances[src] -= amount
            balances[dst] += amount
            return True, tuple(sorted(balances.items()))
        if f == "balances":
            return tuple(balances[a] for a in value), state
        raise ValueError(f"bank model has no operation {f!r}")

    def describe_state(self, state: BankState) -> str:
        return "{" + ", ".join(f"{a}: {b}" for a, b in state) + "}"


def moved(opening: Mapping[str, int], moves: Sequence[Move]) -> dict[str, int]:
    """The balances after `moves`, each applied once (no check for overdraft)."""
    balances = dict(opening)
    for src, dst, amount in moves:
        balances[src] -= amount
        balances[dst] += amount
    return balances


def explain_final(
    opening: Mapping[str, int], done: Sequence[Move], maybe: Sequence[Move], final: Mapping[str, int]
) -> str | None:
    """Why `final` is no state the transfers can leave (None when it is one): every transfer in
    `done` applied once, each in `maybe` once or not at all, no account below zero."""
    total = sum(opening.values())
    if sum(final.values()) != total:
        return f"the accounts hold {sum(final.values())} in total, not {total}: money was made or lost"
    if negative := sorted(a for a, b in final.items() if b < 0):
        return f"{', '.join(negative)} went below zero ({', '.join(str(final[a]) for a in negative)})"
    tried = 0
    for count in range(len(maybe) + 1):
        for chosen in itertools.combinations(maybe, count):
            if moved(opening, [*done, *chosen]) == dict(final):
                return None
            tried += 1
            if tried >= MAX_SUBSETS:
                return None  # too many unknown outcomes to tell: the totals above are all that is judged
    return (
        f"final balances {dict(sorted(final.items()))} are not the opening ones plus each completed "
        f"transfer once ({len(done)} completed, {len(maybe)} of unknown outcome)"
    )


def explain_audit(opening: Mapping[str, int], seen: Mapping[str, int]) -> str | None:
    """Why an audit of every account saw no state a serial order produces (None when it did)."""
    total = sum(opening.values())
    if (got := sum(seen.values())) != total:
        return f"an audit saw {dict(sorted(seen.items()))}, {got} in total, not {total}"
    if negative := sorted(a for a, b in seen.items() if b < 0):
        return f"an audit saw {', '.join(negative)} below zero"
    return None
