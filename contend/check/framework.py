"""The battery `contend check` runs: per family, a list of named checks.

A check gets a `CheckContext` (the target server, a fresh namespace, the
implementation's factory, the options) and raises `CheckFailed` with one line
of evidence when the implementation breaks a property.
"""

from __future__ import annotations

import contextlib
import inspect
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import redis

from contend.target.keyspace import Namespace
from contend.target.target import Target


class CheckFailed(AssertionError):
    """The implementation broke a property; the message is the evidence."""


@dataclass
class CheckOptions:
    """Sizes and seed of the battery."""

    seed: int = 0
    model_ops: int = 300
    serial_names: int = 2_000
    burst_clients: int = 16
    burst_rounds: int = 20
    burst_names_per_client: int = 50
    schedule_examples: int = 60  # state-machine examples for a correct implementation
    hunt_examples: int = 2000  # the most a known-bad one is searched before it counts as missed
    shrink: bool = True  # shrink a schedule failure to its minimal interleaving


@dataclass
class CheckContext:
    """What a check gets to work with."""

    target: Target
    namespace: Namespace
    factory: Callable[..., Any]
    options: CheckOptions
    dbs: tuple[int, ...] = ()
    subject: Any = None  # the row being checked (name, family, claims, known_bad)
    _clients: list[redis.Redis] = field(default_factory=list)

    def client(self) -> redis.Redis:
        """A new connected client, closed when the check ends."""
        client = self.target.client()
        client.ping()
        self._clients.append(client)
        return client

    def close(self) -> None:
        for client in self._clients:
            with contextlib.suppress(Exception):
                client.close()
        self._clients.clear()


@dataclass(frozen=True)
class Check:
    name: str
    description: str
    run: Callable[[CheckContext], str]  # returns a one-line detail on success


@dataclass(frozen=True)
class LockCheck(Check):
    """A check that runs only for implementations it applies to."""

    needs: str = ""  # a property the implementation must claim ("" : every implementation)
    needs_clock: bool = False  # the factory must take an injectable `clock`

    def applies(self, claims: frozenset[str], factory: Callable[..., Any]) -> bool:
        """Should this check run for an implementation claiming `claims`, built by `factory`?"""
        if self.needs and self.needs not in claims:
            return False
        return not self.needs_clock or takes_clock(factory)


def takes_clock(factory: Callable[..., Any]) -> bool:
    """Does the factory take an injectable `clock` (a client-clock algorithm)?"""
    try:
        return "clock" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


@dataclass(frozen=True)
class CheckResult:
    check: str
    passed: bool
    detail: str
    seconds: float


def run_check(check: Check, ctx: CheckContext) -> CheckResult:
    """Run one check; an exception from the implementation counts as a failure."""
    start = time.perf_counter()
    try:
        detail = check.run(ctx)
        passed = True
    except CheckFailed as exc:
        passed, detail = False, str(exc)
    except Exception as exc:
        passed, detail = False, f"raised {type(exc).__name__}: {exc}"
    finally:
        ctx.close()
    return CheckResult(check.name, passed, detail, time.perf_counter() - start)


@contextlib.contextmanager
def expect(what: str) -> Iterator[None]:
    """Turn an implementation's exception into a CheckFailed naming `what` was being done."""
    try:
        yield
    except CheckFailed:
        raise
    except Exception as exc:
        raise CheckFailed(f"{what}: raised {type(exc).__name__}: {exc}") from exc


def expect_rejected(ctx: CheckContext, what: str, call: Callable[..., object], *args: Any) -> None:
    """`call(*args)` must raise ValueError and leave the namespace empty; else CheckFailed naming `what`."""
    try:
        call(*args)
    except ValueError:
        pass
    except Exception as exc:
        raise CheckFailed(f"{what}: raised {type(exc).__name__}, not ValueError: {exc}") from exc
    else:
        raise CheckFailed(f"{what} was accepted; expected ValueError")
    if (written := ctx.namespace.count()) != 0:
        raise CheckFailed(f"{what} raised ValueError but wrote {written} key(s)")
