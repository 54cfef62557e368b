"""The registry workload: register a new name with the registry strategies of `impl.registry`
(watch, lock_first, lua) or in the user's own registry; ids must stay unique and gap-free (the
user's judged through its own count, reverse and lookup)."""

from __future__ import annotations

import random
import secrets
import threading
from typing import Any, ClassVar

import redis

import contend.impl.registry.lock_first
import contend.impl.transactions.lock_first
from contend.impl import catalog
from contend.impl.registry import RegistrationError, RegistryKeys
from contend.impl.registry.base import text
from contend.load.instrument import CURRENT_STEP, TimedTokenLock
from contend.load.metrics import OperationMetrics, Tally
from contend.load.workload import (
    LOCK,
    LOCK_TIMEOUT,
    OPTIMISTIC,
    SERVER,
    InvariantResult,
    LoadWorkload,
    NoEffect,
    Operation,
    Strategy,
)
from contend.subject.subject import Subject


class RegistryWorkload(LoadWorkload):
    """Register a new name (user id + sequence number) in one of `hot_keys` registries."""

    name = "registry"
    summary = "name→id registration (seed 000/003)"

    KINDS: ClassVar[dict[str, str]] = {"watch": OPTIMISTIC, "lock_first": LOCK, "lua": SERVER}

    def all_strategies(self) -> dict[str, Strategy]:
        found = {}
        for entry in catalog.family("registry"):
            if entry.name in self.KINDS and not entry.known_bad:
                found[entry.name] = Strategy(entry.name, self.KINDS[entry.name], entry.summary)
        return found

    def registries(self, prefix: str, hot_keys: int) -> list[RegistryKeys]:
        return [RegistryKeys(f"{prefix}", f"r{i}") for i in range(hot_keys)]

    def keys(self, prefix: str, hot_keys: int) -> list[str]:
        return [r.counter for r in self.registries(prefix, hot_keys)]

    def user_namespaces(self, prefix: str, hot_keys: int) -> list[str]:
        """The namespace each of a user's registries is made with (and its key in the tally)."""
        return [f"{prefix}:r{i}" for i in range(hot_keys)]

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
        if impl is not None:
            self.accept(impl)
            return self._user_operation(client, prefix, hot_keys, impl, {} if shared is None else shared)
        self.strategy(strategy)
        factory = catalog.by_name(strategy).factory
        kwargs: dict[str, Any] = {}
        if strategy == "lock_first":
            kwargs = {"ttl_ms": ttl_ms, "timeout": LOCK_TIMEOUT}
            # The strategy builds its TokenLock inside register(); this subclass reports
            # wait and hold times to the current operation and otherwise behaves the same.
            contend.impl.registry.lock_first.TokenLock = TimedTokenLock  # type: ignore[misc]
        made: dict[int, Any] = {}
        rng = random.Random()
        counter = iter(range(1 << 62))

        def register(step: OperationMetrics) -> None:
            i = rng.randrange(hot_keys)
            reg = made.get(i)
            if reg is None:
                reg = made[i] = factory(client, prefix, registry=f"r{i}", **kwargs)
            key = reg.keys.counter
            step.keys = (key,)
            before = getattr(reg, "conflicts", 0)
            token = CURRENT_STEP.set(step)
            try:
                reg.register(f"{user_id}:{next(counter)}")
            except RegistrationError as exc:
                raise NoEffect(str(exc)) from exc
            finally:
                CURRENT_STEP.reset(token)
                step.retries += getattr(reg, "conflicts", 0) - before
            step.committed = True
            step.deltas = {key: 1}

        return register

    def _user_operation(
        self, client: redis.Redis, prefix: str, hot_keys: int, impl: Subject, shared: dict[str, Any]
    ) -> Operation:
        """Register the name this process's users register next in one of the user's registries."""
        frontier: _Frontier = shared.setdefault(f"registry-frontier:{prefix}", _Frontier(hot_keys))
        spaces = self.user_namespaces(prefix, hot_keys)
        made: dict[int, Any] = {}
        rng = random.Random()

        def register(step: OperationMetrics) -> None:
            i = rng.randrange(hot_keys)
            reg = made.get(i)
            if reg is None:
                reg = made[i] = impl.factory(client, spaces[i])
            step.keys = (spaces[i],)
            k, name = frontier.name(i)
            reg.register(name)  # any exception: the outcome is unknown (it is the user's own)
            step.committed = True
            step.deltas = {spaces[i]: 1} if frontier.advance(i, k) else {}

        return register

    def check(
        self, client: redis.Redis, prefix: str, hot_keys: int, tally: Tally, impl: Subject | None = None
    ) -> InvariantResult:
        if impl is not None:
            return self._check_user(client, prefix, hot_keys, tally, impl)
        problems: list[str] = []
        names_total = 0
        for keys in self.registries(prefix, hot_keys):
            ids = {text(k): int(v) for k, v in client.hgetall(keys.ids).items()}
            names = {int(k): text(v) for k, v in client.hgetall(keys.names).items()}
            top = int(client.get(keys.counter) or 0)
            names_total += len(ids)
            label = f"registry {keys.registry}"
            if len(set(ids.values())) != len(ids):
                dup = len(ids) - len(set(ids.values()))
                problems.append(f"{label}: {dup} ids handed out twice")
            if sorted(ids.values()) != list(range(1, len(ids) + 1)) or top != len(ids):
                problems.append(
                    f"{label}: ids are not exactly 1..{len(ids)} (counter at {top}, {len(ids)} names)"
                )
            if {i: n for n, i in ids.items()} != names:
                problems.append(f"{label}: the name→id and id→name tables disagree")
            ok, maybe = tally.key_counts(keys.counter)
            if not ok <= len(ids) <= ok + maybe:
                problems.append(
                    f"{label}: {len(ids)} names registered but {ok} registrations succeeded"
                    + (f" (and {maybe} more may have)" if maybe else "")
                )
        if problems:
            return InvariantResult(False, tuple(problems))
        return InvariantResult(
            True,
            (f"{hot_keys} registr{'y' if hot_keys == 1 else 'ies'} hold {names_total} names with unique, "
             f"gap-free ids = {tally.commits} successful registrations",),
        )  # fmt: skip

    def _check_user(
        self, client: redis.Redis, prefix: str, hot_keys: int, tally: Tally, impl: Subject
    ) -> InvariantResult:
        """The same invariant, read through the user's own count, reverse and lookup."""
        problems: list[str] = []
        names_total = 0
        for i, space in enumerate(self.user_namespaces(prefix, hot_keys)):
            label = f"registry r{i}"
            try:
                count, found = _read_back(impl.factory(client, space), label)
            except Exception as exc:  # the user's code: whatever it raises is a finding
                problems.append(f"{label}: reading it back raised {type(exc).__name__}: {exc}")
                continue
            problems += found
            names_total += count
            ok, maybe = tally.key_counts(space)
            if not ok <= count <= ok + maybe:
                problems.append(
                    f"{label}: count() is {count} but {ok} new names were registered"
                    + (f" (and {maybe} more may have been)" if maybe else "")
                )
        if problems:
            return InvariantResult(False, tuple(problems))
        return InvariantResult(
            True,
            (f"{hot_keys} registr{'y' if hot_keys == 1 else 'ies'} of {impl.name} hold {names_total} names "
             f"with unique, gap-free ids and agreeing tables after {tally.commits} successful registrations",),
        )  # fmt: skip


class _Frontier:
    """The name the users of one process register next in each registry: the same name until one
    registration of it returns, so concurrent users register one name at the same moment (what a
    registry must survive) and the names registered are exactly those before the frontier."""

    def __init__(self, hot_keys: int) -> None:
        self.tag = secrets.token_hex(4)  # one process's names are its own
        self.next = [0] * hot_keys
        self.lock = threading.Lock()

    def name(self, registry: int) -> tuple[int, str]:
        k = self.next[registry]
        return k, f"{self.tag}:{k}"

    def advance(self, registry: int, k: int) -> bool:
        """A registration of name `k` returned: True when it is the first (a new name)."""
        with self.lock:
            if self.next[registry] != k:
                return False
            self.next[registry] = k + 1
            return True


def _read_back(registry: Any, label: str) -> tuple[int, list[str]]:
    """count() names, and what is wrong with ids 1..count read through reverse and lookup."""
    count = int(registry.count())
    seen: dict[str, int] = {}
    gaps: list[int] = []
    twice: list[str] = []
    for ident in range(1, count + 1):
        name = registry.reverse(ident)
        if name is None:
            gaps.append(ident)
        elif text(name) in seen:
            twice.append(text(name))
        else:
            seen[text(name)] = ident
    problems = []
    if gaps:
        shown = ", ".join(map(str, gaps[:5])) + (", …" if len(gaps) > 5 else "")
        problems.append(
            f"{label}: count() is {count} but reverse() finds no name for {len(gaps)} id(s) ({shown}): "
            "the ids are not gap-free"
        )
    if twice:
        problems.append(
            f"{label}: {len(twice)} name(s) hold two ids, e.g. {twice[0]!r}: the ids are not unique"
        )
    for name, ident in seen.items():
        got = registry.lookup(name)
        if got is None or int(got) != ident:
            problems.append(
                f"{label}: reverse({ident}) is {name!r} but lookup({name!r}) is {got!r}: the tables disagree"
            )
            break
    beyond = registry.reverse(count + 1)
    if beyond is not None:
        problems.append(f"{label}: reverse({count + 1}) is {text(beyond)!r}, beyond count() = {count}")
    return count, problems
