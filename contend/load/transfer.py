"""The transfer workload: move an amount between two accounts (Redis in Action's marketplace)
with the transaction family's banks, one coarse lock or a lock per account (the user's lock
too); the total must be conserved."""

from __future__ import annotations

import random
from typing import Any, ClassVar

import redis

import contend.impl.registry.lock_first
import contend.impl.transactions.lock_first
from contend.history.isolation import ANOMALY_WORDS
from contend.impl import catalog
from contend.impl.transactions import BankKeys, RetriesExhausted
from contend.load.instrument import CURRENT_STEP, LockTimer, TimedTokenLock
from contend.load.metrics import OperationMetrics, Tally
from contend.load.workload import (
    LOCK,
    LOCK_TIMEOUT,
    OPTIMISTIC,
    SERVER,
    UNSAFE,
    WATCH_ATTEMPTS,
    InvariantResult,
    LoadWorkload,
    NoEffect,
    Operation,
    Strategy,
)
from contend.subject.subject import Subject


class TransferWorkload(LoadWorkload):
    """Move 1..100 from one account to another; `hot_keys`+1 accounts, so 1 hot key is one pair.

    watch, lock_first and lua are the transaction family's banks (`impl.transactions`, the
    catalog's bank_watch, bank_lock_first and bank_lua); coarse_lock and fine_locks take token
    locks (or the user's lock) around a read and a MULTI/EXEC. The known-bad banks run only
    with CONTEND_LOAD_KNOWN_BAD=1: their broken sum is reported with the anomaly `contend check`
    names for them.
    """

    name = "transfer"
    summary = "two-key transfer (Redis in Action's marketplace)"

    INITIAL = 1_000_000
    #: Strategy -> the catalog's transaction implementation behind it.
    BANKS: ClassVar[dict[str, str]] = {
        "watch": "bank_watch",
        "lock_first": "bank_lock_first",
        "lua": "bank_lua",
        "transfer_no_watch": "transfer_no_watch",
        "transfer_watch_some": "transfer_watch_some",
    }

    def all_strategies(self) -> dict[str, Strategy]:
        kinds = {"watch": OPTIMISTIC, "lock_first": LOCK, "lua": SERVER}
        banks = {
            name: Strategy(
                name,
                kinds.get(name, UNSAFE),
                catalog.by_name(entry).summary,
                catalog.by_name(entry).known_bad,
            )
            for name, entry in self.BANKS.items()
        }
        return {
            **{n: s for n, s in banks.items() if not s.known_bad},
            "coarse_lock": Strategy("coarse_lock", LOCK, "one token lock over all accounts, then MGET and MULTI"),
            "fine_locks": Strategy("fine_locks", LOCK, "a token lock per account, taken in key order"),
            **{n: s for n, s in banks.items() if s.known_bad},
        }  # fmt: skip

    def accounts(self, hot_keys: int) -> list[str]:
        return [str(i) for i in range(hot_keys + 1)]

    def keys(self, prefix: str, hot_keys: int) -> list[str]:
        layout = BankKeys(prefix)
        return [layout.account(a) for a in self.accounts(hot_keys)]

    def setup(self, client: redis.Redis, prefix: str, hot_keys: int) -> None:
        keys = self.keys(prefix, hot_keys)
        for start in range(0, len(keys), 500):
            client.mset({k: self.INITIAL for k in keys[start : start + 500]})

    def operation(
        self,
        client: redis.Redis,
        prefix: str,
        strategy: str,
        hot_keys: int,
        ttl_ms: int,
        user_id: str,
        impl: Subject | None = None,
        shared: dict[str, Any] | None = None,
    ) -> Operation:
        factory = catalog.by_name("token").factory
        if impl is not None:
            self.accept(impl)
            strategy, factory = impl.name, impl.factory  # a lock per account, as fine_locks
        else:
            self.strategy(strategy)
        accounts = self.accounts(hot_keys)
        layout = BankKeys(prefix)
        rng = random.Random()

        def pick(step: OperationMetrics) -> tuple[str, str, int]:
            a, b = rng.sample(accounts, 2)
            step.keys = (layout.account(a), layout.account(b))
            return a, b, rng.randint(1, 100)

        def moved(step: OperationMetrics, a: str, b: str, amount: int) -> None:
            step.committed = True
            step.deltas = {layout.account(a): -amount, layout.account(b): amount}

        if strategy in self.BANKS:
            entry = catalog.by_name(self.BANKS[strategy])
            options: dict[str, Any] = {}
            if strategy == "watch":
                options = {"max_retries": WATCH_ATTEMPTS}
            elif strategy == "lock_first":
                options = {"ttl_ms": ttl_ms, "timeout": LOCK_TIMEOUT}
                # As the registry's lock_first: its locks report wait, hold and polls to the step.
                contend.impl.transactions.lock_first.TokenLock = TimedTokenLock  # type: ignore[misc]
            bank = entry.factory(client, prefix, **options)

            def transfer(step: OperationMetrics) -> None:
                a, b, amount = pick(step)
                before = bank.conflicts
                token = CURRENT_STEP.set(step)
                try:
                    done = bank.transfer(a, b, amount)
                except RetriesExhausted as exc:
                    raise NoEffect(str(exc)) from None
                finally:
                    CURRENT_STEP.reset(token)
                    step.retries += bank.conflicts - before
                if done:
                    moved(step, a, b, amount)
                else:
                    step.declined = True

            return transfer
        coarse = f"{prefix}:lock"

        def write(a: str, b: str, amount: int) -> bool:
            """Under a lock: read both, then write both in one MULTI/EXEC (two round trips)."""
            key_a, key_b = layout.account(a), layout.account(b)
            balance_a, balance_b = (int(v or 0) for v in client.mget(key_a, key_b))
            if balance_a < amount:
                return False
            with client.pipeline(transaction=True) as pipe:
                pipe.set(key_a, balance_a - amount)
                pipe.set(key_b, balance_b + amount)
                pipe.execute()
            return True

        def locked(step: OperationMetrics) -> None:
            a, b, amount = pick(step)
            names = [coarse] if strategy == "coarse_lock" else [layout.lock(k) for k in sorted((a, b))]
            timers: list[LockTimer] = []
            try:
                for name in names:
                    timer = LockTimer(factory(client, name, ttl_ms), client, step)
                    if not timer.acquire(LOCK_TIMEOUT):
                        raise NoEffect(f"could not take {name!r} within {LOCK_TIMEOUT:g} s")
                    timers.append(timer)
                if write(a, b, amount):
                    moved(step, a, b, amount)
                else:
                    step.declined = True
            finally:
                for timer in reversed(timers):
                    timer.release()

        return locked

    def check(
        self, client: redis.Redis, prefix: str, hot_keys: int, tally: Tally, impl: Subject | None = None
    ) -> InvariantResult:
        keys = self.keys(prefix, hot_keys)
        balances = {k: int(v or 0) for k, v in zip(keys, client.mget(keys), strict=True)}
        expected = self.INITIAL * len(keys)
        total = sum(balances.values())
        problems = []
        if total != expected:
            problems.append(
                f"the {len(keys)} accounts hold {total} in total, not {expected}: {total - expected:+}"
            )
        negative = [k for k, v in balances.items() if v < 0]
        if negative:
            problems.append(f"{len(negative)} account(s) below zero, e.g. {negative[0]}")
        for key, balance in balances.items():
            ok, maybe = tally.key_counts(key)
            if not maybe and balance != self.INITIAL + ok:
                problems.append(
                    f"{key} holds {balance} but the transfers that succeeded leave {self.INITIAL + ok}"
                )
                break
        if problems:
            entry = self.BANKS.get(tally.strategy)
            anomaly = catalog.by_name(entry).anomaly if entry else ""
            if anomaly:
                problems.append(
                    f"contend check --only {entry} names the anomaly: {anomaly} "
                    f"({ANOMALY_WORDS.get(anomaly, '')})"
                )
            return InvariantResult(False, tuple(problems))
        return InvariantResult(
            True,
            (f"{len(keys)} accounts still hold {expected} in total after {tally.commits} transfers",),
        )
