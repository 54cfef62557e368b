"""Loading the code under test: `package.module:factory` (or the factory itself), its signature
checked against the protocol of its kind before any server is touched."""

from __future__ import annotations

import importlib
import os
import sys
import traceback
from collections.abc import Callable
from typing import Any

from contend.subject.protocols import PROTOCOLS, ProtocolError, check_factory_signature, protocol


def load_factory(spec: str, *, callable_only: bool = True) -> Any:
    """Import `package.module:attribute` and return it (a callable unless `callable_only` is
    False); ProtocolError saying what is wrong.

    The current directory is searched first, as `python -m` does: an installed distribution that
    ships a top-level package of the same name (Redis-Semaphore ships `tests`) must not hide it.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ProtocolError(f"--impl {spec!r}: expected package.module:factory, e.g. mypkg.registry:make")
    if os.getcwd() not in sys.path[:1] and sys.path[:1] != [""]:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ProtocolError(
            f"--impl {spec!r}: cannot import {module_name!r} ({exc}); is it installed, or in the "
            "current directory or on PYTHONPATH?"
        ) from None
    except SyntaxError as exc:
        raise ProtocolError(
            f"--impl {spec!r}: {exc.filename or module_name}, line {exc.lineno}: {exc.msg}; fix the "
            "syntax error and run again"
        ) from None
    except Exception as exc:  # the module's own code raised while it was imported
        raise ProtocolError(
            f"--impl {spec!r}: importing {module_name!r} raised {type(exc).__name__}: {exc}"
            f"{_where(exc)}; fix the module so that it imports"
        ) from None
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise ProtocolError(f"--impl {spec!r}: module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    if callable_only and not callable(obj):
        raise ProtocolError(f"--impl {spec!r}: {attr!r} is a {type(obj).__name__}, not a callable factory")
    return obj


def _where(exc: BaseException) -> str:
    """' at FILE, line N': the line of a module's own code that raised while it was imported (the
    innermost module body on the traceback), or "" when none is there."""
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if f.name == "<module>"]
    frames = [f for f in frames if not f.filename.startswith("<frozen")]
    return f" at {frames[-1].filename}, line {frames[-1].lineno}" if frames else ""


def user_factory(spec: str | Callable[..., Any], kind: str) -> Callable[..., Any]:
    """Import `package.module:factory` (or take the factory itself) and check its signature,
    before any server is touched."""
    if kind not in PROTOCOLS:
        raise ProtocolError(f"--kind {kind!r} has no battery yet; choose one of {', '.join(PROTOCOLS)}")
    if isinstance(spec, str):
        factory = load_factory(spec)
    elif callable(spec):
        factory = spec
    else:
        raise ProtocolError(
            f"the factory {spec!r} is a {type(spec).__name__}, not a callable: pass the function or "
            f"class that makes a {kind}, called as {protocol(kind)[0]}, or 'package.module:factory'"
        )
    check_factory_signature(factory, kind, factory_name(spec))
    return factory


def factory_name(factory: str | Callable[..., Any]) -> str:
    """How a factory is named in the table and the evidence: `package.module:factory`."""
    if isinstance(factory, str):
        return factory
    module = getattr(factory, "__module__", None) or "?"
    qualname = getattr(factory, "__qualname__", None) or getattr(factory, "__name__", None)
    return f"{module}:{qualname or repr(factory)}"
