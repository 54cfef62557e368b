"""What a load workload is, free of Locust: its strategies (`Strategy`, grouped by kind), the
`LoadWorkload` base class (setup / operation / check), the errors of a run, and the user's own
code (`--impl M:F --kind K`) as one more strategy, taken through the one door for it
(contend.subject.resolve). The workloads themselves are contend.load.counter, .registry and
.transfer; contend.load.workloads lists them."""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import redis

from contend.errors import ContendError
from contend.load.metrics import OperationMetrics, Tally
from contend.subject.resolve import load
from contend.subject.spec import Scope, parse_spec
from contend.subject.subject import Subject
from contend.values import family_label, positive_whole

#: Environment variable that adds known-bad strategies (for tests that show a broken run fails).
KNOWN_BAD_ENV = "CONTEND_LOAD_KNOWN_BAD"

#: Kinds of strategy: how the report groups them.
OPTIMISTIC = "optimistic"  # WATCH/MULTI/EXEC, retried on conflict
LOCK = "lock"  # take a lock first, then read and write
SERVER = "server"  # one atomic server-side step (INCR, Lua): the ceiling
UNSAFE = "unsafe"  # no protection at all (known-bad, tests only)
USER = "user"  # a user's own registry (--impl): how it protects itself is its own business
QUEUE = "queue"  # a work queue's put, take and ack (the jobs workload)

#: The kinds of user implementation a load run drives (--impl M:F --kind K), and the workloads each runs in.
USER_WORKLOADS: dict[str, tuple[str, ...]] = {
    "lock": ("counter", "transfer"),
    "registry": ("registry",),
    "rate_limiter": ("limiter",),
    "queue": ("jobs",),
}

#: A blocking lock acquire gives up after this many seconds (the operation then fails, with no effect).
LOCK_TIMEOUT = 30.0
#: WATCH retries: as impl.registry.watch, jittered exponential backoff, bounded attempts.
WATCH_ATTEMPTS = 1000
WATCH_BACKOFF_BASE = 0.0005
WATCH_BACKOFF_CAP = 0.02


#: The kinds of --impl contend load runs, as `--impl needs --kind` names them.
LOAD_KINDS = "lock, registry, rate-limiter or queue: what contend load runs"


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
    kinds = {"lock": LOCK, "queue": QUEUE}
    return Strategy(spec, kinds.get(kind, USER), f"your {kind}: {spec}")


def _workloads_text(names: tuple[str, ...]) -> str:
    return f"{' and '.join(names)} workload{'s' if len(names) > 1 else ''}"


_EACH = [f"{family_label(k)} (the {_workloads_text(w)})" for k, w in USER_WORKLOADS.items()]
_RUNS = f"{', '.join(_EACH[:-1])} or {_EACH[-1]}"
#: What contend load runs of the user's code (--impl M:F --kind K), and how it refuses the rest.
LOAD_SCOPE = Scope(
    named=LOAD_KINDS,
    kinds=tuple(USER_WORKLOADS),
    other_kind=f"--kind {{label}}: contend load runs your {_RUNS}, not {{what}}; check it with "
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
    #: What the sweep's raw ceiling for this workload runs (contend.load.ceiling): PING, or the
    #: queue's LPUSH then RPOP.
    ceiling = "ping"

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


def check_positive(value: Any, option: str, hint: str = "") -> int:
    """A whole number > 0 (an int, or text of one), or LoadInputError naming the option."""
    return positive_whole(value, option, hint, error=LoadInputError)
