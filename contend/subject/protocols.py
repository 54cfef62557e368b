"""The protocols the code under test meets, and the few facts contend reads off what it returns.

A check tests what the protocol promises and nothing more (docs/protocol.md, "Your own code:
the protocol"):

* lock: `factory(client, key, ttl_ms)` with `acquire(blocking=True, timeout=None) -> bool` and
  `release()`. Optional, detected and then checked: `extend(ttl_ms)`, a fencing token (the
  int `acquire` returns instead of True, or a `fencing_token` attribute after a successful
  acquire). A semaphore's factory also takes `limit`.
* A `release()` or `extend()` of a lease no longer held may raise any exception or return
  normally or False: that is a refusal. Safe release is judged by its effect on others.
* One lock object is used by one client thread: acquire, release and extend of an object are
  called from the same thread, so thread-local tokens work.
* registry: `factory(client, namespace)` with `register`, `lookup`, `reverse`, `count`;
  `register_many(names)` optional. No limit on a name's length.
* single-flight: `factory(client, key, ttl_ms)` with `call(fn)`.
* transaction: `factory(client, namespace)` with `open(account, balance)`,
  `transfer(src, dst, amount) -> bool` (False: the source holds less, nothing written) and
  `balances(accounts) -> {account: balance}`. An amount <= 0, an unknown account or a transfer
  to the same account raises before anything is written.
* queue: `factory(client, name)` with `put(item) -> id`, `take(timeout) -> (id, item) | None`
  and `ack(id)`; optional, detected and then checked: `extend(id, ms)`, `nack(id)`. The object
  (or the factory) declares its visibility lease in `lease_ms` (None or absent: an item is never
  delivered twice). An ack, extend or nack of an id the consumer does not hold may raise or return
  False (refused) or do nothing (harmless). A factory that takes a `lease_ms` keyword is given the
  lease the checks want.
* operations (your own primitive): `factory(client, namespace)` and a list of operations, each a
  method name and a Hypothesis strategy of its argument tuple (contend.subject.operations).
* rate_limiter: `factory(client, key, limit, window_ms)` with `hit(cost=1) -> bool` (admitted or
  refused); optional, detected and then checked: `remaining() -> int`.
* Bad input: `ttl_ms <= 0`, an empty key or an empty name raises (any exception) before
  anything is written (a queue: also take(timeout < 0) and an item it cannot serialise; a rate
  limiter: limit < 1 or window_ms <= 0, from the factory or the first hit). Nothing stricter.
* A factory that can only hold leases in whole seconds (a library taking int seconds) says
  so with an attribute `ttl_resolution_ms = 1000`; the checks then use TTLs it can hold.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contend.errors import ContendError
from contend.values import family_label

#: kind -> (factory signature in words, {method: what it must do})
PROTOCOLS: dict[str, tuple[str, dict[str, str]]] = {
    "registry": (
        "factory(client: redis.Redis, namespace: str)",
        {
            "register": "register(name) -> int",
            "lookup": "lookup(name) -> int | None",
            "reverse": "reverse(id) -> str | None",
            "count": "count() -> int",
        },
    ),
    "lock": (
        "factory(client: redis.Redis, key: str, ttl_ms: int)",
        {
            "acquire": "acquire(blocking: bool = True, timeout: float | None = None) -> bool",
            "release": "release() -> None",
        },
    ),
    "semaphore": (
        "factory(client: redis.Redis, key: str, ttl_ms: int, limit: int = 1)",
        {
            "acquire": "acquire(blocking: bool = True, timeout: float | None = None) -> bool",
            "release": "release() -> None",
        },
    ),
    "single_flight": (
        "factory(client: redis.Redis, key: str, ttl_ms: int)",
        {"call": "call(fn) -> the result of fn, run once across concurrent callers"},
    ),
    "transaction": (
        "factory(client: redis.Redis, namespace: str)",
        {
            "open": "open(account, balance) -> None",
            "transfer": "transfer(src, dst, amount) -> bool",
            "balances": "balances(accounts) -> dict[str, int]",
        },
    ),
    "operations": (
        "factory(client: redis.Redis, namespace: str)",
        {},  # the methods its operation list names (contend.subject.operations)
    ),
    "queue": (
        "factory(client: redis.Redis, name: str)",
        {
            "put": "put(item) -> id",
            "take": "take(timeout: float) -> (id, item) | None",
            "ack": "ack(id) -> None",
        },
    ),
    "rate_limiter": (
        "factory(client: redis.Redis, key: str, limit: int, window_ms: int)",
        {"hit": "hit(cost: int = 1) -> bool"},
    ),
}
#: Kinds whose factory takes (client, namespace) rather than (client, key, ttl_ms).
NAMESPACE_KINDS = frozenset({"registry", "transaction", "operations"})
#: Kinds whose factory takes (client, name): a key of their own, no TTL.
NAME_KINDS = frozenset({"queue"})
#: The method whose being a coroutine function marks code for redis.asyncio, per kind.
MAIN_METHOD = {
    "registry": "register",
    "single_flight": "call",
    "transaction": "transfer",
    "queue": "take",
    "rate_limiter": "hit",
}
#: The limit and window (ms) contend gives a rate limiter it builds only to look at.
PROBE_LIMIT, PROBE_WINDOW_MS = 10, 10_000

#: Where a lock's fencing token comes from.
TOKEN_RETURNED = "acquire's return"
TOKEN_ATTRIBUTE = "the fencing_token attribute"


@dataclass(frozen=True)
class Capabilities:
    """What an implementation offers beyond the protocol's required methods."""

    extend: bool = False
    fencing: str | None = None  # TOKEN_RETURNED, TOKEN_ATTRIBUTE or None
    register_many: bool = False
    clock: bool = False  # the factory takes an injectable `clock`
    ttl_resolution_ms: int = 1  # the factory can only hold leases in multiples of this (whole seconds: 1000)
    nack: bool = False  # a queue that can give a job back
    lease_ms: float | None = None  # the visibility lease a queue declares
    remaining: bool = False  # a rate limiter that says what its window has left
    #: What went wrong while finding these out (the code raised), for the table's evidence.
    note: str = ""

    def describe(self) -> str:
        """'extend, fencing token from acquire's return' or 'nothing optional'."""
        parts = []
        if self.extend:
            parts.append("extend")
        if self.fencing:
            parts.append(f"fencing token from {self.fencing}")
        if self.register_many:
            parts.append("register_many")
        if self.clock:
            parts.append("an injectable clock")
        if self.nack:
            parts.append("nack")
        if self.remaining:
            parts.append("remaining")
        if self.lease_ms is not None:
            parts.append(f"a {self.lease_ms:g} ms lease")
        if self.ttl_resolution_ms > 1:
            parts.append(f"leases in steps of {self.ttl_resolution_ms} ms")
        text = ", ".join(parts) or "nothing optional"
        return f"{text} (not all found out: {self.note})" if self.note else text


class ProtocolError(ContendError):
    """A user's factory or the object it returns does not follow the protocol."""


def check_factory_signature(factory: Callable[..., Any], kind: str, spec: str) -> None:
    """A factory must accept every call the checks make of it: the protocol's positional
    arguments, and a semaphore's `limit` by keyword or not at all (one holder: `limit` = 1)."""
    signature, _ = protocol(kind)
    wanted = 2 if kind in NAMESPACE_KINDS | NAME_KINDS else 4 if kind == "rate_limiter" else 3
    calls: list[dict[str, Any]] = [{}, {"limit": 2}] if kind == "semaphore" else [{}]
    try:
        found = inspect.signature(factory)
    except (TypeError, ValueError):
        return  # builtins without a signature: find out when it is called
    for keywords in calls:
        try:
            found.bind(*range(wanted), **keywords)
        except TypeError as exc:
            raise ProtocolError(
                f"--impl {spec!r}: a {family_label(kind)} factory is called as {signature}"
                + (
                    f", and as factory(client, key, ttl_ms, limit=2) for {keywords['limit']} holders"
                    if keywords
                    else ""
                )
                + f"; {spec.rpartition(':')[2] or 'it'}{found} cannot take that ({exc}): give it "
                "those parameters, or choose the --kind it is written for"
            ) from None


def check_object(obj: Any, kind: str, spec: str) -> None:
    """The object a factory returned has every method of the protocol."""
    signature, methods = protocol(kind)
    missing = [text for name, text in methods.items() if not callable(getattr(obj, name, None))]
    if missing:
        raise ProtocolError(
            f"--impl {spec!r}: {signature} returned a {type(obj).__name__} without "
            + "; ".join(missing)
            + f". A {kind} needs: "
            + ", ".join(methods.values())
        )


def factory_args(kind: str, where: str) -> tuple[Any, ...]:
    """What follows the client when contend builds one object to look at: a registry's or bank's
    namespace, a queue's name, a rate limiter's key, limit and window, or a lock's key and a 10 s TTL."""
    if kind == "rate_limiter":
        return (where, PROBE_LIMIT, PROBE_WINDOW_MS)
    return (where,) if kind in NAMESPACE_KINDS | NAME_KINDS else (where, 10_000)


def declared_lease(obj: Any, factory: Any = None) -> float | None:
    """The visibility lease (ms) a queue object, or else its factory, declares in `lease_ms`."""
    for holder in (obj, factory):
        value = getattr(holder, "lease_ms", None)
        if isinstance(value, int | float) and not isinstance(value, bool) and value > 0:
            return float(value)
    return None


def protocol(kind: str) -> tuple[str, dict[str, str]]:
    if kind not in PROTOCOLS:
        raise ProtocolError(f"unknown --kind {kind!r}; choose one of {', '.join(PROTOCOLS)}")
    return PROTOCOLS[kind]


def takes_clock(factory: Callable[..., Any]) -> bool:
    """Does the factory take an injectable `clock` (a client-clock algorithm)?"""
    try:
        return "clock" in inspect.signature(factory).parameters
    except (TypeError, ValueError):
        return False


def fencing_token(lock: Any, acquired: Any, fencing: str | None) -> int | None:
    """The fencing token of a successful acquire that returned `acquired`, if the lock has one."""
    if fencing == TOKEN_RETURNED:
        return as_token(acquired)
    if fencing == TOKEN_ATTRIBUTE:
        return as_token(getattr(lock, "fencing_token", None))
    return None


def granted(acquired: Any) -> bool:
    """Did an acquire that returned `acquired` take the lease? True, or a fencing token."""
    return acquired is not None and acquired is not False and bool(acquired)


def as_token(value: Any) -> int | None:
    """`value` if it can be a fencing token (an int, not a bool), else None."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def ttl_resolution(factory: Callable[..., Any]) -> int:
    """What the factory says its leases' granularity is (`ttl_resolution_ms`; 1 if nothing)."""
    value = getattr(factory, "ttl_resolution_ms", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1
