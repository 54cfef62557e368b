"""The user's own primitive (`--kind operations`): its operation list and, optionally, its model,
found and held to the protocol before any server is touched.

The module that holds the factory also holds `OPERATIONS`, a dict (or a list of pairs) from an
operation's name, a method of the object the factory returns, to a Hypothesis strategy that draws
the tuple of its positional arguments:

    OPERATIONS = {"reserve": st.tuples(st.integers(1, 3)), "stock": st.just(())}

`--operations MODULE:ATTR` names another list; `--model MODULE:CLASS` (or a `MODEL` attribute
beside the factory) a small class with the same methods, the sequential specification. Without
a model, the implementation run one operation at a time on a fresh namespace is its own
specification (as Lincheck does): contend.machines.sequential.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, find, settings
from hypothesis import strategies as st
from hypothesis.errors import HypothesisException, NoSuchExample, Unsatisfiable

from contend.subject.loader import load_factory
from contend.subject.protocols import ProtocolError

#: The module attributes beside the factory that hold the operation list and the model.
OPERATIONS_ATTRIBUTE = "OPERATIONS"
MODEL_ATTRIBUTE = "MODEL"


@dataclass(frozen=True)
class Operation:
    """One operation: the name of the method, and the strategy that draws its arguments (a tuple)."""

    name: str
    args: st.SearchStrategy[tuple[Any, ...]]


@dataclass(frozen=True)
class OperationList:
    """What a user's primitive is checked with: its operations and its model (None: the re-run)."""

    operations: tuple[Operation, ...]
    model: type | None = None
    #: How the command line names them when they are not the defaults beside the factory
    #: (`--operations M:A`, `--model M:C`), for the replay line.
    flags: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(op.name for op in self.operations)

    def describe(self) -> str:
        """'reserve, restock, stock; model StockModel' or '...; no model: the implementation re-run'."""
        spec = f"model {self.model.__name__}" if self.model else "no model: the implementation re-run"
        return f"{', '.join(self.names)}; {spec}"


def load_operations(
    factory: Callable[..., Any],
    spec: str,
    operations: str | Any | None = None,
    model: str | type | None = None,
) -> OperationList:
    """The operation list (`operations`, else OPERATIONS beside the factory) and the model
    (`model`, else MODEL beside the factory, else none), checked: ProtocolError (exit 2, one line)
    for a list that is missing, empty, malformed or whose strategies cannot draw, or a model
    without the operations' methods. Nothing touches a server."""
    flags: list[str] = []
    if operations is None:
        module = sys.modules.get(getattr(factory, "__module__", "") or "")
        operations = getattr(module, OPERATIONS_ATTRIBUTE, None)
        if operations is None:
            raise ProtocolError(
                f"--impl {spec}: --kind operations needs the operation list: an {OPERATIONS_ATTRIBUTE} dict "
                "beside the factory ({name: strategy of the argument tuple}), or --operations MODULE:ATTR"
            )
        where = f"{getattr(module, '__name__', '?')}.{OPERATIONS_ATTRIBUTE}"
    elif isinstance(operations, str):
        where = operations
        flags += ["--operations", operations]
        operations = _attribute(operations, "--operations", "MODULE:ATTR, e.g. mypkg.stock:OPERATIONS")
    else:
        where = "operations"
    ops = _parse(operations, where, spec)
    if model is None:
        module = sys.modules.get(getattr(factory, "__module__", "") or "")
        model = getattr(module, MODEL_ATTRIBUTE, None)
    elif isinstance(model, str):
        flags += ["--model", model]
        model = _attribute(model, "--model", "MODULE:CLASS, e.g. mypkg.stock:StockModel")
    if model is not None:
        _check_model(model, ops, spec)
    assert model is None or isinstance(model, type)
    return OperationList(ops, model, tuple(flags))


def _attribute(text: str, option: str, shape: str) -> Any:
    """`package.module:attr` imported, as --impl is (the same messages, naming `option`)."""
    if ":" not in text:
        raise ProtocolError(f"{option} {text!r}: expected {shape}")
    try:
        return load_factory(text, callable_only=False)
    except ProtocolError as exc:
        raise ProtocolError(str(exc).replace("--impl", option, 1)) from None


def _parse(given: Any, where: str, spec: str) -> tuple[Operation, ...]:
    """`given` as operations: a mapping or a sequence of (name, strategy) pairs, each strategy
    drawing a tuple; every refusal names `where` and says what to write."""
    shape = "{'reserve': st.tuples(st.integers(1, 3)), 'stock': st.just(())}"
    if isinstance(given, Mapping):
        pairs = list(given.items())
    elif isinstance(given, list | tuple):
        pairs = list(given)
        if not all(isinstance(p, list | tuple) and len(p) == 2 for p in pairs):
            raise ProtocolError(f"{where}: expected (name, strategy) pairs or a dict like {shape}")
    else:
        raise ProtocolError(
            f"{where} is a {type(given).__name__}: expected a dict of operation name to the strategy of "
            f"its arguments, like {shape}"
        )
    if not pairs:
        raise ProtocolError(f"{where} is empty: name at least one operation, like {shape}")
    ops: list[Operation] = []
    for name, strategy in pairs:
        if not isinstance(name, str) or not name.isidentifier() or name.startswith("_"):
            raise ProtocolError(f"{where}: {name!r} is not a method name (a public identifier)")
        if not isinstance(strategy, st.SearchStrategy):
            raise ProtocolError(
                f"{where}[{name!r}] is a {type(strategy).__name__}, not a Hypothesis strategy: give the "
                "strategy of its argument tuple, e.g. st.tuples(st.integers(1, 3)), or st.just(()) for none"
            )
        _check_draws(strategy, f"{where}[{name!r}]")
        ops.append(Operation(name, strategy))
    if len({op.name for op in ops}) != len(ops):
        raise ProtocolError(f"{where}: an operation is named twice")
    return tuple(ops)


def _check_draws(strategy: st.SearchStrategy[Any], where: str) -> None:
    """The strategy draws, and what it draws is a tuple: else one line saying which and why."""
    try:
        drawn = find(
            strategy,
            lambda _: True,
            settings=settings(database=None, max_examples=50, suppress_health_check=list(HealthCheck)),
        )
    except (NoSuchExample, Unsatisfiable):
        raise ProtocolError(
            f"{where} cannot draw anything (st.nothing(), or a filter nothing passes): "
            "give a strategy that draws argument tuples"
        ) from None
    except (HypothesisException, Exception) as exc:
        raise ProtocolError(
            f"{where} cannot draw: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
        ) from None
    if not isinstance(drawn, tuple):
        raise ProtocolError(
            f"{where} draws {drawn!r}, not a tuple of arguments: wrap it, e.g. st.tuples(st.integers(1, 3))"
        )


def _check_model(model: Any, ops: tuple[Operation, ...], spec: str) -> None:
    """A model is a class whose instances have a method per operation."""
    if not inspect.isclass(model):
        raise ProtocolError(
            f"--impl {spec}: the model is a {type(model).__name__}, not a class: give a small class "
            "with one method per operation (made with no arguments)"
        )
    missing = [op.name for op in ops if not callable(getattr(model, op.name, None))]
    if missing:
        raise ProtocolError(
            f"--impl {spec}: the model {model.__name__} has no method {', '.join(missing)}: it needs one "
            "per operation, returning what the implementation returns"
        )


def check_operations_callable(obj: Any, ops: OperationList, spec: str) -> None:
    """Every operation names a method of the object the factory returned (a coroutine function
    too: code for redis.asyncio, see `operations_are_async`)."""
    if inspect.isawaitable(obj):
        if inspect.iscoroutine(obj):
            obj.close()  # never awaited: no warning at exit
        raise ProtocolError(
            f"--impl {spec}: the factory returned a {type(obj).__name__}, not the object (is it `async "
            "def`?): it must build the object and return it without awaiting; its operations may be "
            "`async def`"
        )
    for op in ops.operations:
        method = getattr(obj, op.name, None)
        if not callable(method):
            what = "nothing" if method is None else f"a {type(method).__name__}"
            raise ProtocolError(
                f"--impl {spec}: operation {op.name!r} names {what} on the {type(obj).__name__} the factory "
                f"returned, not a method; the object has {', '.join(_public(obj)) or 'no public methods'}"
            )


def operations_are_async(obj: Any, ops: OperationList) -> bool:
    """Is the primitive code for redis.asyncio: is one of its operations a coroutine function?
    (Its clients are then redis.asyncio ones, each operation run on its client's own loop; an
    operation that is a plain method of such an object is called as it is.)"""
    return any(inspect.iscoroutinefunction(getattr(obj, op.name, None)) for op in ops.operations)


def _public(obj: Any) -> list[str]:
    return [n for n in dir(obj) if not n.startswith("_") and callable(getattr(obj, n, None))]
