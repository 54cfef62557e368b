"""The protocols a user's implementation meets, and loading one from `package.module:factory`."""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable
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


class ProtocolError(ContendError):
    """A user's factory or the object it returns does not follow the protocol."""


def load_factory(spec: str) -> Callable[..., Any]:
    """Import `package.module:attribute` and return it; ProtocolError saying what is wrong."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ProtocolError(f"--impl {spec!r}: expected package.module:factory, e.g. mypkg.registry:make")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProtocolError(
            f"--impl {spec!r}: cannot import {module_name!r} ({exc}); is it installed or on PYTHONPATH?"
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
