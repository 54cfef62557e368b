"""The load-test workloads and the strategies each is run with, free of Locust.

A workload sets its keys up before a run (`setup`), builds one operation per
simulated user (`operation`), and checks its invariant after the run
(`check`) from what Redis holds and what the users tallied:

* registry: register a new name with the registry strategies of
  `impl.registry` (watch, lock_first, lua); ids must stay unique and gap-free.
* counter: seed 002's `ham`, a read-modify-write increment: WATCH, lock-first
  with each correct lock of the catalog, and INCR / a Lua script as the
  ceiling; every counter must equal the increments that succeeded.
* transfer: move an amount between two accounts, in the spirit of Redis in
  Action's marketplace: the transaction family's banks (WATCH, lock-first,
  Lua), one coarse lock, a lock per account; the total must be conserved.

A user's own implementation (`--impl package.module:factory --kind K`, the
protocols of `contend.subject.protocols`) runs as one more strategy, named by its
spec: a lock protects the counter's and the transfer's read-modify-write (a
lock per account, taken in key order), so a lock that lets two clients in shows
as lost increments or money not conserved; a registry takes the registry
workload's registrations, on names the users of one process register at the
same moment, and is judged through its own `count`, `reverse` and `lookup`.

`hot_keys` is how many distinct keys the users fight over (1: all on one).
Known-bad implementations stay out of load runs; setting CONTEND_LOAD_KNOWN_BAD=1
adds a few to the counter workload, so a test can show a broken run fails.
"""

from __future__ import annotations

import os
import random
import secrets
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import redis
from redis.exceptions import WatchError

import contend.impl.registry.lock_first
import contend.impl.transactions.lock_first
from contend.errors import ContendError
from contend.history.isolation import ANOMALY_WORDS
from contend.impl import catalog
from contend.impl.registry import RegistrationError, RegistryKeys
from contend.impl.registry.base import text
from contend.impl.transactions import BankKeys, RetriesExhausted
from contend.load.instrument import CURRENT_STEP, LockTimer, TimedTokenLock
from contend.load.metrics import OperationMetrics, Tally
from contend.subject.resolve import load
from contend.subject.spec import Scope, parse_spec
from contend.subject.subject import Subject
from contend.values import positive_whole

#: Environment variable that adds known-bad strategies (for tests that show a broken run fails).
KNOWN_BAD_ENV = "CONTEND_LOAD_KNOWN_BAD"

#: Kinds of strategy: how the report groups them.
OPTIMISTIC = "optimistic"  # WATCH/MULTI/EXEC, retried on conflict
LOCK = "lock"  # take a lock first, then read and write
SERVER = "server"  # one atomic server-side step (INCR, Lua): the ceiling
UNSAFE = "unsafe"  # no protection at all (known-bad, tests only)
USER = "user"  # a user's own registry (--impl): how it protects itself is its own business

#: The kinds of user implementation a load run drives (--impl M:F --kind K), and the workloads each runs in.
USER_WORKLOADS: dict[str, tuple[str, ...]] = {"lock": ("counter", "transfer"), "registry": ("registry",)}

#: A blocking lock acquire gives up after this many seconds (the operation then fails, with no effect).
LOCK_TIMEOUT = 30.0
#: WATCH retries: as impl.registry.watch, jittered exponential backoff, bounded attempts.
WATCH_ATTEMPTS = 1000
WATCH_BACKOFF_BASE = 0.0005
WATCH_BACKOFF_CAP = 0.02


#: The kinds of --impl contend load runs, as `--impl needs --kind` names them.
LOAD_KINDS = "lock or registry: what contend load runs"


class LoadInputError(ContendError):
    """A load-test option that cannot work (unknown strategy, hot keys <= 0, ...)."""


class NoEffect(Exception):
    """An operation gave up without changing anything (retries exhausted, lock not taken)."""


@dataclass(frozen=True)
class Strategy:
    name: str
    kind: str
    summary: str
    known_bad: bool = False


@dataclass(frozen=True)
class InvariantResult:
    """The end-of-run invariant check: `ok`, and one line per finding."""

    ok: bool
    lines: tuple[str, ...]


Operation = Callable[[OperationMetrics], None]


def user_workloads(code: Subject) -> tuple[str, ...]:
    """The workloads a user's implementation runs in, by its kind."""
    return USER_WORKLOADS[code.family]


def user_strategy(spec: str, kind: str) -> Strategy:
    """How a user's implementation appears among the strategies: its spec, a lock or a `user` kind."""
    return Strategy(spec, LOCK if kind == "lock" else USER, f"your {kind}: {spec}")


def _workloads_text(names: tuple[str, ...]) -> str:
    return f"{' and '.join(names)} workload{'s' if len(names) > 1 else ''}"


_RUNS = " or ".join(f"{k} (the {_workloads_text(w)})" for k, w in USER_WORKLOADS.items())
#: What contend load runs of the user's code (--impl M:F --kind K), and how it refuses the rest.
LOAD_SCOPE = Scope(
    named=LOAD_KINDS,
    kinds=tuple(USER_WORKLOADS),
    other_kind=f"--kind {{label}}: contend load runs your {_RUNS}, not a {{label}}; check it with "
    "contend check --impl {spec} --kind {label}",
    unknown_kind=f"unknown --kind {{kind!r}}; contend load runs your {_RUNS}",
)


def user_code(spec: str, kind: str) -> Subject:
    """`--impl package.module:factory --kind K` through the one door (parsed with load's scope,
    imported, its signature checked): a strategy named `spec`. ContendError (bad input) when
    that cannot work."""
    parsed = parse_spec(spec, kind, LOAD_SCOPE)
    assert parsed is not None  # a spec and a kind
    return load(parsed)


def backoff(attempt: int) -> None:
    """Sleep before WATCH attempt number `attempt` (0 is the first: no sleep)."""
    if attempt:
        pause = min(WATCH_BACKOFF_CAP, WATCH_BACKOFF_BASE * 2 ** min(attempt, 16))
        time.sleep(random.uniform(0, pause))


def known_bad_enabled() -> bool:
    return os.environ.get(KNOWN_BAD_ENV, "") not in ("", "0")


class LoadWorkload:
    """Base class: a name, its strategies, and setup / operation / check."""

    name = "abstract"
    summary = ""

    def all_strategies(self) -> dict[str, Strategy]:
        raise NotImplementedError

    def strategies(self, *, include_known_bad: bool | None = None) -> dict[str, Strategy]:
        """The strategies a run may use; known-bad ones only when asked (or CONTEND_LOAD_KNOWN_BAD=1)."""
        if include_known_bad is None:
            include_known_bad = known_bad_enabled()
        return {n: s for n, s in self.all_strategies().items() if include_known_bad or not s.known_bad}

    def strategy(self, name: str) -> Strategy:
        """The strategy called `name`; LoadInputError listing the known ones."""
        found = self.strategies().get(name)
        if found is None:
            known = ", ".join(self.strategies())
            raise LoadInputError(f"the {self.name} workload has no strategy {name!r}; pick one of: {known}")
        return found

    def keys(self, prefix: str, hot_keys: int) -> list[str]:
        """The contended keys (what `hot_keys` counts)."""
        raise NotImplementedError

    def setup(self, client: redis.Redis, prefix: str, hot_keys: int) -> None:
        """Write the initial state (default: nothing)."""

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
        """One user's operation. With `impl`, the user's implementation is the strategy; `shared` is
        state the users of one process share during one run."""
        raise NotImplementedError

    def check(
        self, client: redis.Redis, prefix: str, hot_keys: int, tally: Tally, impl: Subject | None = None
    ) -> InvariantResult:
        raise NotImplementedError

    def accept(self, impl: Subject) -> None:
        """LoadInputError unless this workload runs implementations of `impl`'s kind."""
        if self.name not in user_workloads(impl):
            raise LoadInputError(
                f"--impl {impl.name} is a {impl.family}: it runs in the "
                f"{_workloads_text(user_workloads(impl))}, not in {self.name}"
            )


def _lock_strategies() -> dict[str, tuple[Strategy, Callable[..., Any]]]:
    """Every lock and semaphore of the catalog as a counter strategy: token is `lock_first`."""
    found: dict[str, tuple[Strategy, Callable[..., Any]]] = {}
    for entry in catalog.family("lock") + catalog.family("semaphore"):
        name = "lock_first" if entry.name == "token" else f"lock_{entry.name}"
        summary = f"{entry.name} lock, then GET and SET: {entry.summary}"
        found[name] = (Strategy(name, LOCK, summary, entry.known_bad), entry.factory)
    return found


class CounterWorkload(LoadWorkload):
    """Seed 002's `ham`: GET the counter, SET it one higher, under some protection."""

    name = "counter"
    summary = "read-modify-write counter (seed 002's ham)"

    # KEYS[1]: the counter. The counter one higher, as INCR would give it (GET and SET: the same steps).
    LUA = """
    local v = tonumber(redis.call('GET', KEYS[1]) or '0') + 1
    redis.call('SET', KEYS[1], v)
    return v
    """

    def all_strategies(self) -> dict[str, Strategy]:
        locks = {name: s for name, (s, _) in _lock_strategies().items()}
        return {
            "watch": Strategy("watch", OPTIMISTIC, "WATCH, GET, MULTI SET EXEC; retried on conflict"),
            **{n: s for n, s in locks.items() if not s.known_bad},
            "incr": Strategy("incr", SERVER, "INCR: one atomic command"),
            "lua": Strategy("lua", SERVER, "a script doing GET and SET: one atomic round trip"),
            "naive": Strategy("naive", UNSAFE, "GET then SET with no protection", known_bad=True),
            **{n: s for n, s in locks.items() if s.known_bad},
        }

    def keys(self, prefix: str, hot_keys: int) -> list[str]:
        return [f"{prefix}:ham:{i}" for i in range(hot_keys)]

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
            strategy, kind, factory = impl.name, LOCK, impl.factory
        else:
            kind = self.strategy(strategy).kind
        keys = self.keys(prefix, hot_keys)
        rng = random.Random()

        def pick(step: OperationMetrics) -> str:
            key = keys[rng.randrange(hot_keys)]
            step.keys = (key,)
            return key

        def commit(step: OperationMetrics, key: str) -> None:
            step.committed = True
            step.deltas = {key: 1}

        if strategy == "watch":

            def watch(step: OperationMetrics) -> None:
                key = pick(step)
                for attempt in range(WATCH_ATTEMPTS):
                    backoff(attempt)
                    with client.pipeline() as pipe:
                        try:
                            pipe.watch(key)
                            value = int(pipe.get(key) or 0)
                            pipe.multi()
                            pipe.set(key, value + 1)
                            pipe.execute()
                            commit(step, key)
                            return
                        except WatchError:
                            step.retries += 1
                raise NoEffect(f"gave up on {key!r} after {WATCH_ATTEMPTS} attempts aborted by conflicts")

            return watch
        if strategy == "incr":

            def incr(step: OperationMetrics) -> None:
                key = pick(step)
                client.incr(key)
                commit(step, key)

            return incr
        if strategy == "lua":
            script = client.register_script(self.LUA)

            def lua(step: OperationMetrics) -> None:
                key = pick(step)
                script(keys=[key])
                commit(step, key)

            return lua
        if strategy == "naive":

            def naive(step: OperationMetrics) -> None:
                key = pick(step)
                value = int(client.get(key) or 0)
                client.set(key, value + 1)
                commit(step, key)

            return naive
        assert kind == LOCK
        if impl is None:
            factory = _lock_strategies()[strategy][1]

        def locked(step: OperationMetrics) -> None:
            key = pick(step)
            timer = LockTimer(factory(client, f"{key}:lock", ttl_ms), client, step)
            if not timer.acquire(LOCK_TIMEOUT):
                raise NoEffect(f"could not take the lock on {key!r} within {LOCK_TIMEOUT:g} s")
            try:
                value = int(client.get(key) or 0)
                client.set(key, value + 1)
                commit(step, key)
            finally:
                timer.release()

        return locked

    def check(
        self, client: redis.Redis, prefix: str, hot_keys: int, tally: Tally, impl: Subject | None = None
    ) -> InvariantResult:
        problems: list[str] = []
        keys = self.keys(prefix, hot_keys)
        values = [int(v or 0) for v in client.mget(keys)]
        for key, value in zip(keys, values, strict=True):
            ok, maybe = tally.key_counts(key)
            if not ok <= value <= ok + maybe:
                extra = f" (and {maybe} more may have)" if maybe else ""
                what = (
                    f"{ok - value} lost updates"
                    if value < ok
                    else f"{value - ok - maybe} increments from nowhere"
                )
                problems.append(f"{key} is {value} but {ok} increments succeeded{extra}: {what}")
        if problems:
            return InvariantResult(False, tuple(problems))
        cut = (
            f" ({tally.unknown} of unknown outcome: raised, or cut short at the end)" if tally.unknown else ""
        )
        return InvariantResult(
            True,
            (
                f"{hot_keys} counter(s) hold {sum(values)} in total = {tally.commits} successful increments{cut}",
            ),
        )


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


WORKLOADS: dict[str, LoadWorkload] = {
    w.name: w for w in (RegistryWorkload(), CounterWorkload(), TransferWorkload())
}


def workload(name: str) -> LoadWorkload:
    """The workload called `name`; LoadInputError listing the known ones."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise LoadInputError(f"no workload called {name!r}; pick one of: {', '.join(WORKLOADS)}") from None


def check_positive(value: Any, option: str, hint: str = "") -> int:
    """A whole number > 0 (an int, or text of one), or LoadInputError naming the option."""
    return positive_whole(value, option, hint, error=LoadInputError)
