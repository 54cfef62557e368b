"""The protocols a user's implementation meets, what contend detects about it, and loading one
from `package.module:factory`.

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
* Bad input: `ttl_ms <= 0`, an empty key or an empty name raises (any exception) before
  anything is written. Nothing stricter.
* A factory that can only hold leases in whole seconds (a library taking int seconds) says
  so with an attribute `ttl_resolution_ms = 1000`; the checks then use TTLs it can hold.
"""

from __future__ import annotations

import contextlib
import importlib
import inspect
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contend.errors import ContendError

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
}

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
        if self.ttl_resolution_ms > 1:
            parts.append(f"leases in steps of {self.ttl_resolution_ms} ms")
        return ", ".join(parts) or "nothing optional"


class ProtocolError(ContendError):
    """A user's factory or the object it returns does not follow the protocol."""


def load_factory(spec: str) -> Callable[..., Any]:
    """Import `package.module:attribute` and return it; ProtocolError saying what is wrong.

    The current directory is searched too (after installed packages), as `python -m` would.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ProtocolError(f"--impl {spec!r}: expected package.module:factory, e.g. mypkg.registry:make")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProtocolError(
            f"--impl {spec!r}: cannot import {module_name!r} ({exc}); is it installed, or in the "
            "current directory or on PYTHONPATH?"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ProtocolError(f"--impl {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise ProtocolError(f"--impl {spec!r}: {attr!r} is a {type(obj).__name__}, not a callable factory")
    return obj  # type: ignore[no-any-return]


def check_factory_signature(factory: Callable[..., Any], kind: str, spec: str) -> None:
    """A factory must accept the protocol's positional arguments."""
    signature, _ = protocol(kind)
    wanted = 2 if kind == "registry" else 3
    try:
        inspect.signature(factory).bind(*range(wanted))
    except TypeError as exc:
        raise ProtocolError(f"--impl {spec!r}: a {kind} factory is called as {signature}; {exc}") from None
    except ValueError:
        pass  # builtins without a signature: find out when it is called


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
        return _as_token(acquired)
    if fencing == TOKEN_ATTRIBUTE:
        return _as_token(getattr(lock, "fencing_token", None))
    return None


def granted(acquired: Any) -> bool:
    """Did an acquire that returned `acquired` take the lease? True, or a fencing token."""
    return acquired is not None and acquired is not False and bool(acquired)


def _as_token(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def detect_capabilities(factory: Callable[..., Any], kind: str, make: Callable[[], Any]) -> Capabilities:
    """What an implementation offers: `make()` builds one object (on a key nobody else uses);
    for a lock, one acquire and release of it tell where its fencing token comes from."""
    obj = make()
    if kind == "registry":
        return Capabilities(register_many=callable(getattr(obj, "register_many", None)))
    clock = takes_clock(factory)
    resolution = ttl_resolution(factory)
    if kind == "single_flight":
        return Capabilities(clock=clock, ttl_resolution_ms=resolution)
    extend = callable(getattr(obj, "extend", None))
    fencing = None
    acquired = obj.acquire(blocking=False)
    if inspect.isawaitable(acquired):
        if inspect.iscoroutine(acquired):
            acquired.close()
        raise ProtocolError(
            "acquire() returned an awaitable, but is not `async def`: contend runs its async battery "
            "for an implementation whose protocol methods are coroutine functions; declare acquire, "
            "release (and extend) `async def`"
        )
    if granted(acquired):
        if _as_token(acquired) is not None:
            fencing = TOKEN_RETURNED
        elif _as_token(getattr(obj, "fencing_token", None)) is not None:
            fencing = TOKEN_ATTRIBUTE
        with contextlib.suppress(Exception):  # a refusal here says nothing about capabilities
            obj.release()
    return Capabilities(extend=extend, fencing=fencing, clock=clock, ttl_resolution_ms=resolution)


def detect_async_capabilities(factory: Callable[..., Any], kind: str, url: str, key: str) -> Capabilities:
    """`detect_capabilities` for async code: one object on a fresh redis.asyncio client (a cluster
    client for a redis+cluster:// URL), and for a lock one acquire and release of it, run to the
    end on a loop of their own."""
    import asyncio

    from contend.servers.target import async_client

    async def probe() -> Capabilities:
        client = async_client(url)
        try:
            obj = factory(client, key) if kind == "registry" else factory(client, key, 10_000)
            if kind == "registry":
                return Capabilities(register_many=callable(getattr(obj, "register_many", None)))
            if kind == "single_flight":
                return Capabilities()
            fencing = None
            acquired = await obj.acquire(blocking=False)
            if granted(acquired):
                if _as_token(acquired) is not None:
                    fencing = TOKEN_RETURNED
                elif _as_token(getattr(obj, "fencing_token", None)) is not None:
                    fencing = TOKEN_ATTRIBUTE
                with contextlib.suppress(Exception):
                    await obj.release()
            return Capabilities(extend=callable(getattr(obj, "extend", None)), fencing=fencing)
        finally:
            await client.aclose()

    return asyncio.run(probe())


def ttl_resolution(factory: Callable[..., Any]) -> int:
    """What the factory says its leases' granularity is (`ttl_resolution_ms`; 1 if nothing)."""
    value = getattr(factory, "ttl_resolution_ms", 1)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 1


def is_async(factory: Callable[..., Any], kind: str) -> bool:
    """Are the protocol's methods of what `factory` makes coroutines (code for redis.asyncio)?
    Found on an object built with an unconnected client, nothing sent: a synchronous one first
    (what most factories take, and one a library may keep for later), then an asyncio one for a
    factory that refuses a synchronous client."""
    import redis.asyncio

    method = {"registry": "register", "single_flight": "call"}.get(kind, "acquire")
    # Port 1 on the loopback: a factory that talks to its server while building reaches no one
    # (never a Redis that happens to run on the default port).
    for client in (redis.Redis(port=1), redis.asyncio.Redis(port=1)):
        try:
            obj = (
                factory(client, "contend:probe")
                if kind == "registry"
                else factory(client, "contend:probe", 10_000)
            )
        except Exception:  # it wants another client, or something else: the battery will say what
            continue
        found = inspect.iscoroutinefunction(getattr(obj, method, None))
        if found != isinstance(client, redis.asyncio.Redis):
            _forget_scripts(obj, client)  # scripts of the wrong flavour cached for later objects
        return found
    return False


def _forget_scripts(obj: Any, client: Any) -> None:
    """Undo what building `obj` with a probe client of the other flavour cached on its classes:
    redis-py's Lock (sync and asyncio alike) registers its scripts once per class with the first
    client it is given, and a synchronous Script would stay there for every later async lock.
    (Scripts of the right flavour stay: a library may guard its own cache, as python-redis-lock
    does with a module global, and they are called with each lock's own client.)"""
    held = [obj, *getattr(obj, "__dict__", {}).values()]  # an adapter holds the library's lock
    for cls in {c for o in held for c in type(o).__mro__}:
        for name, value in list(vars(cls).items()):
            if getattr(value, "registered_client", None) is client:
                setattr(cls, name, None)
