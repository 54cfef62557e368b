"""Run callables released at the same instant: the cheap way to provoke races.

Each callable should already hold its own connected client: one that must first open a
connection starts late and the burst degrades into a queue. `burst` runs each in a thread
of its own, all released by a `threading.Barrier`. A `Crowd` is the clients a check's burst
uses, of the kind the code under test takes, so that a burst check is written once:
redis-py clients whose calls `burst` runs in threads, or for `redis.asyncio` code,
redis.asyncio clients whose calls run as tasks on one event loop of the crowd's own,
released together by an `asyncio.Event` (asyncio.Barrier's job, on Python 3.10 too) and run
by `asyncio.gather`. The loop runs every ready task before it reads a socket, so all the
clients' first commands leave before any reply comes back: a check-then-act between two
awaits is hit every round.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from contend.check.framework import CheckContext


@dataclass(frozen=True)
class CallResult:
    """What one callable returned, or the exception it raised."""

    value: Any = None
    error: BaseException | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


def burst(calls: Sequence[Callable[[], Any]], timeout: float = 60.0) -> list[CallResult]:
    """Run every call in its own thread, all released by one barrier; outcomes in order."""
    barrier = threading.Barrier(len(calls))
    outcomes: list[CallResult] = [CallResult() for _ in calls]

    def run(i: int, call: Callable[[], Any]) -> None:
        try:
            barrier.wait(timeout)
            outcomes[i] = CallResult(value=call())
        except BaseException as exc:
            outcomes[i] = CallResult(error=exc)

    threads = [threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        if t.is_alive():
            raise TimeoutError(f"a burst thread was still running after {timeout} s")
    return outcomes


def errors_summary(outcomes: Sequence[CallResult]) -> str:
    """'3 of 16 raised RegistrationError: Failed to register ...' or ''."""
    failed = [o.error for o in outcomes if o.error is not None]
    if not failed:
        return ""
    first = failed[0]
    return f"{len(failed)} of {len(outcomes)} raised {type(first).__name__}: {first}"


class Crowd:
    """`size` connected clients of the kind the code under test takes (see the module's text);
    `who` names them in evidence: "clients" (threads) or "tasks" (on one loop)."""

    def __init__(self, ctx: CheckContext, size: int) -> None:
        self.asynchronous = bool(getattr(ctx.subject, "asynchronous", False))
        self.who = "tasks" if self.asynchronous else "clients"
        self._loop: asyncio.AbstractEventLoop | None = None
        if self.asynchronous:
            self._loop = asyncio.new_event_loop()
            self.clients: list[Any] = [ctx.target.async_client() for _ in range(size)]
        else:
            self.clients = [ctx.client() for _ in range(size)]

    def call(self, call: Callable[[], Any]) -> Any:
        """`call()` run to its end, alone: what it returns, awaited on the crowd's loop if need be."""
        result = call()
        if self._loop is not None and inspect.isawaitable(result):
            return self._loop.run_until_complete(awaited(result))
        return result

    def at_once(self, calls: Sequence[Callable[[], Any]], timeout: float = 60.0) -> list[CallResult]:
        """Every call released at the same instant: in threads (`burst`), or as tasks on the
        crowd's loop once every client is connected; outcomes in order."""
        if self._loop is None:
            return burst(calls, timeout)
        return self._loop.run_until_complete(self._together(calls))

    async def _together(self, calls: Sequence[Callable[[], Any]]) -> list[CallResult]:
        await asyncio.gather(*(c.ping() for c in self.clients))  # connected before the start
        go = asyncio.Event()

        async def one(call: Callable[[], Any]) -> Any:
            await go.wait()
            return await awaited(call())

        tasks = [asyncio.ensure_future(one(c)) for c in calls]
        await asyncio.sleep(0)  # every task waits at the start line
        go.set()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        return [CallResult(error=r) if isinstance(r, BaseException) else CallResult(value=r) for r in results]

    def close(self) -> None:
        """Close an async crowd's clients, then its loop (a sync crowd's close with the check)."""
        loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            for client in self.clients:
                with contextlib.suppress(Exception):
                    loop.run_until_complete(client.aclose())
        finally:
            loop.close()


@contextlib.contextmanager
def crowd(ctx: CheckContext, size: int) -> Iterator[Crowd]:
    """A `Crowd` of `size` clients for the length of the block."""
    made = Crowd(ctx, size)
    try:
        yield made
    finally:
        made.close()


class Called:
    """An object whose methods are called to their end: awaited on the crowd's loop for async
    code (attributes that are not methods, a queue's `lease_ms` say, read as they are)."""

    def __init__(self, obj: Any, people: Crowd) -> None:
        self._obj = obj
        self._crowd = people

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._obj, name)
        if not callable(method):
            return method
        return lambda *args: self._crowd.call(lambda: method(*args))


def to_the_end(work: Callable[..., Any], *args: Any) -> Any:
    """A coroutine function's work run to its end on a loop of this thread's own (a synchronous
    object's methods, never awaited, run as they are)."""
    return asyncio.run(work(*args))


async def awaited(value: Any) -> Any:
    """`value`, awaited if it is awaitable (what a synchronous or an async method returned)."""
    return await value if inspect.isawaitable(value) else value
