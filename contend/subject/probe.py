"""Finding out what the code under test offers beyond its protocol (extend, a fencing token,
register_many, an injectable clock), whether it is code for redis.asyncio, and whether a factory
builds an object with the protocol's methods, each within a bounded time."""

from __future__ import annotations

import contextlib
import inspect
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any, TypeVar

import redis

from contend.servers.cluster_client import CrossSlotError
from contend.subject.protocols import (
    MAIN_METHOD,
    NAMESPACE_KINDS,
    TOKEN_ATTRIBUTE,
    TOKEN_RETURNED,
    Capabilities,
    ProtocolError,
    as_token,
    check_object,
    declared_lease,
    factory_args,
    granted,
    protocol,
    takes_clock,
    ttl_resolution,
)

T = TypeVar("T")


class FactoryRaised(ProtocolError):
    """The factory itself raised when contend asked it for one object: nothing can be checked."""


def build(make: Callable[[], Any], kind: str) -> Any:
    """`make()`, or FactoryRaised saying what the factory raised and what to change."""
    try:
        return make()
    except ProtocolError:
        raise
    except Exception as exc:
        where = _where(exc)
        raise FactoryRaised(
            f"the {kind} factory raised {type(exc).__name__}: {exc}{where} when contend asked it for one "
            f"object (as it does for every client); it must return an object with the protocol's "
            f"methods for valid arguments"
        ) from None


def _where(exc: BaseException) -> str:
    """' (at file.py:LINE)' for the innermost frame of `exc`'s traceback that is not contend's."""
    tb = exc.__traceback__
    place = ""
    while tb is not None:
        name = tb.tb_frame.f_code.co_filename
        if "/contend/" not in name.replace("\\", "/"):
            place = f" (at {name.rsplit('/', 1)[-1]}:{tb.tb_lineno})"
        tb = tb.tb_next
    return place


def detect_capabilities(factory: Callable[..., Any], kind: str, make: Callable[[], Any]) -> Capabilities:
    """What an implementation offers: `make()` builds one object (on a key nobody else uses);
    for a lock, one acquire and release of it tell where its fencing token comes from. If that
    acquire raises, the capabilities that need it stay unknown (`note` says why), and the checks
    report what the implementation does."""
    obj = build(make, kind)
    if kind in NAMESPACE_KINDS:
        return Capabilities(register_many=callable(getattr(obj, "register_many", None)))
    clock = takes_clock(factory)
    resolution = ttl_resolution(factory)
    if kind == "single_flight":
        return Capabilities(clock=clock, ttl_resolution_ms=resolution)
    if kind == "rate_limiter":
        return Capabilities(remaining=callable(getattr(obj, "remaining", None)))
    extend = callable(getattr(obj, "extend", None))
    if kind == "queue":
        return _queue_capabilities(obj, factory)
    fencing = None
    try:
        acquired = obj.acquire(blocking=False)
    except Exception as exc:
        return Capabilities(
            extend=extend,
            clock=clock,
            ttl_resolution_ms=resolution,
            note=f"acquire(blocking=False) on a free lock raised {type(exc).__name__}: {exc}{_where(exc)}",
        )
    if inspect.isawaitable(acquired):
        if inspect.iscoroutine(acquired):
            acquired.close()
        raise ProtocolError(
            "acquire() returned an awaitable, but is not `async def`: contend runs its async battery "
            "for an implementation whose protocol methods are coroutine functions; declare acquire, "
            "release (and extend) `async def`"
        )
    if granted(acquired):
        if as_token(acquired) is not None:
            fencing = TOKEN_RETURNED
        elif as_token(getattr(obj, "fencing_token", None)) is not None:
            fencing = TOKEN_ATTRIBUTE
        with contextlib.suppress(Exception):  # a refusal here says nothing about capabilities
            obj.release()
    return Capabilities(extend=extend, fencing=fencing, clock=clock, ttl_resolution_ms=resolution)


def _queue_capabilities(obj: Any, factory: Callable[..., Any]) -> Capabilities:
    """A queue's: extend and nack if it has them, and the lease it declares (sync or async alike)."""
    return Capabilities(
        extend=callable(getattr(obj, "extend", None)),
        nack=callable(getattr(obj, "nack", None)),
        lease_ms=declared_lease(obj, factory),
    )


def detect_async_capabilities(factory: Callable[..., Any], kind: str, url: str, key: str) -> Capabilities:
    """`detect_capabilities` for async code: one object on a fresh redis.asyncio client (a cluster
    client for a redis+cluster:// URL), and for a lock one acquire and release of it, run to the
    end on a loop of their own."""
    import asyncio

    from contend.servers.target import async_client

    async def probe() -> Capabilities:
        client = async_client(url)
        try:
            obj = build(lambda: factory(client, *factory_args(kind, key)), kind)
            if kind in NAMESPACE_KINDS:
                return Capabilities(register_many=callable(getattr(obj, "register_many", None)))
            if kind in ("single_flight", "operations"):
                return Capabilities()
            if kind == "queue":
                return _queue_capabilities(obj, factory)
            if kind == "rate_limiter":
                return Capabilities(remaining=callable(getattr(obj, "remaining", None)))
            fencing = None
            try:
                acquired = await obj.acquire(blocking=False)
            except Exception as exc:
                note = (
                    f"acquire(blocking=False) on a free lock raised {type(exc).__name__}: {exc}{_where(exc)}"
                )
                return Capabilities(extend=callable(getattr(obj, "extend", None)), note=note)
            if granted(acquired):
                if as_token(acquired) is not None:
                    fencing = TOKEN_RETURNED
                elif as_token(getattr(obj, "fencing_token", None)) is not None:
                    fencing = TOKEN_ATTRIBUTE
                with contextlib.suppress(Exception):
                    await obj.release()
            return Capabilities(extend=callable(getattr(obj, "extend", None)), fencing=fencing)
        finally:
            await client.aclose()

    return asyncio.run(probe())


class FactoryHangs(ProtocolError):
    """The factory did not return within PROBE_SECONDS: it waits while building its object."""


def build_in_time(factory: Callable[..., Any], kind: str, *args: Any) -> Any:
    """`factory(*args)` in a thread of its own: what it returns, or what it raises; FactoryHangs
    when it does not return within PROBE_SECONDS (nothing can stop it: the thread is left)."""
    # In a 1-tuple, so a factory that returns None is told from one that never returns.
    built, error = within(lambda: (factory(*args),))
    if built is None and error is None:
        raise FactoryHangs(
            f"the factory did not return within {PROBE_SECONDS:g} s when called as {protocol(kind)[0]}: "
            "it must build its object and return (waiting belongs in the object's methods, such as acquire)"
        )
    if error is not None:
        raise error
    assert built is not None
    return built[0]


def is_async(factory: Callable[..., Any], kind: str) -> bool:
    """Are the protocol's methods of what `factory` makes coroutines (code for redis.asyncio)?
    Found on an object built with an unconnected client, nothing sent: a synchronous one first
    (what most factories take, and one a library may keep for later), then an asyncio one for a
    factory that refuses a synchronous client."""
    import redis.asyncio

    method = MAIN_METHOD.get(kind, "acquire")
    # Port 1 on the loopback: a factory that talks to its server while building reaches no one
    # (never a Redis that happens to run on the default port).
    for client in (redis.Redis(port=1), redis.asyncio.Redis(port=1)):
        args = factory_args(kind, "contend:probe")
        try:
            obj = build_in_time(factory, kind, client, *args)
        except FactoryHangs:
            raise
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


#: Seconds finding out an implementation's capabilities may take (one acquire and release).
PROBE_SECONDS = 5.0


def within(probe: Callable[[], T], seconds: float | None = None) -> tuple[T | None, BaseException | None]:
    """Run `probe()` in a thread of its own for at most `seconds`: (what it found, what it raised);
    (None, None) if it did not return in time (code we did not write may hang)."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["found"] = probe()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, name="contend-probe", daemon=True)
    thread.start()
    thread.join(PROBE_SECONDS if seconds is None else seconds)
    return box.get("found"), box.get("error")


def bounded(probe: Callable[[], Capabilities], otherwise: Capabilities) -> Capabilities:
    """`probe()`, or `otherwise` if it does not return within PROBE_SECONDS (the checks will then
    report what hangs); a ProtocolError it raises is passed on."""
    found, error = within(probe)
    if isinstance(error, CrossSlotError):
        return otherwise  # on a Redis Cluster: the checks report the keys that span slots
    if isinstance(error, ProtocolError) or (error is not None and not isinstance(error, Exception)):
        raise error  # the protocol is not met (said in a line); or KeyboardInterrupt, SystemExit
    if error is not None:  # what the code raised is for the checks to report, with their evidence
        return replace(otherwise, note=f"probing raised {type(error).__name__}: {error}{_where(error)}")
    return found if found is not None else otherwise


def check_offline(factory: Callable[..., Any], kind: str, spec: str) -> None:
    """Build one object on a client that is never connected and check it has the protocol's
    methods, so a wrong factory is refused before a server starts. A factory that talks to the
    server (or raises) while building is checked on the server instead (`probe`)."""
    offline = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.1, socket_timeout=0.1)
    try:
        args = factory_args(kind, "contend:offline")
        try:
            obj = build_in_time(factory, kind, offline, *args)
        except FactoryHangs:
            raise
        except Exception:
            return
        check_object(obj, kind, spec)
    finally:
        offline.close()


def offline_object_of(factory: Callable[..., Any], kind: str, *, asynchronous: bool = False) -> Any:
    """One object built on a client that is never connected (a redis.asyncio one with
    `asynchronous`), or None if the factory raised (then it is looked at on the server)."""
    import redis.asyncio

    offline: Any = (
        redis.asyncio.Redis(host="127.0.0.1", port=1)
        if asynchronous
        else redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.1, socket_timeout=0.1)
    )
    try:
        return build_in_time(factory, kind, offline, *factory_args(kind, "contend:offline"))
    except FactoryHangs:
        raise
    except Exception:
        return None
    finally:
        if not asynchronous:  # an asyncio client never connected holds nothing to close
            offline.close()


def try_once(
    factory: Callable[..., Any], kind: str, spec: str, client: redis.Redis, where: str
) -> Capabilities | None:
    """Before a run of the user's code (stress, load): one object built on the server, under
    `where` (a registry's namespace, a lock's key), checked against the protocol, and for a lock
    one acquire and release of it (None if they did not return within PROBE_SECONDS).
    ContendError (exit 2) naming `spec` when the factory raises,
    the object lacks the protocol's methods, or the first acquire of a free lock raises: a run
    of code that cannot take one step measures nothing."""

    built: list[Any] = []

    def make() -> Any:
        obj = factory(client, *factory_args(kind, where))
        built.append(obj)
        check_object(obj, kind, spec)
        return obj

    found, error = within(lambda: detect_capabilities(factory, kind, make))
    if found is None and error is None and not built:
        raise FactoryHangs(
            f"--impl {spec}: the factory did not return within {PROBE_SECONDS:g} s when called as "
            f"{protocol(kind)[0]}: it must build its object and return (waiting belongs in the "
            "object's methods, such as acquire)"
        )
    if isinstance(error, FactoryRaised):
        raise FactoryRaised(f"--impl {spec}: {error}") from None
    if isinstance(error, ProtocolError) or (error is not None and not isinstance(error, Exception)):
        raise error
    if error is not None:
        raise ProtocolError(
            f"--impl {spec}: making one {kind} and trying it before the run raised "
            f"{type(error).__name__}: {error}{_where(error)}; `contend check --impl {spec} --kind {kind}` "
            "says more"
        ) from None
    if kind == "queue" and built and inspect.iscoroutinefunction(getattr(built[0], "take", None)):
        raise ProtocolError(
            f"--impl {spec}: take() is a coroutine; runs under load take queues written for redis-py "
            f"only so far (check a redis.asyncio queue with `contend check --impl {spec} --kind queue`)"
        )
    if found is not None and found.note:
        raise ProtocolError(
            f"--impl {spec}: {found.note}: a run of it would measure nothing; "
            f"`contend check --impl {spec} --kind {kind}` says more"
        )
    return found
