"""The scheduler's side of one client thread: what it is doing (its Status), how its operation
ended, and the calls its code makes through the gates at each round trip and sleep. The thread
runs only while it holds the baton (contend.schedule.scheduler)."""

from __future__ import annotations

import asyncio
import enum
import inspect
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from contend.schedule.event_loop import VirtualClockLoop
from contend.schedule.gating import (
    REAL_EVENT_WAIT,
    CancelAt,
    LostReply,
    SchedulerView,
    bind,
    is_script_run,
)
from contend.schedule.trace import TraceEntry


class ClientCrashed(BaseException):
    """Raised inside a crashed client's thread so its operation unwinds without touching Redis."""


class Status(enum.Enum):
    IDLE = "idle"  # no operation in progress
    READY = "ready"  # about to send a round trip
    SLEEPING = "sleeping"  # in a (virtual) sleep
    CRASHED = "crashed"  # abandoned; never runs again
    ENDED = "ended"  # a thread the code under test started, run to its end


@dataclass
class OperationResult:
    """How a client's operation ended."""

    value: Any = None
    error: BaseException | None = None
    done: bool = False

    @property
    def ok(self) -> bool:
        return self.done and self.error is None


class Controller(SchedulerView, Protocol):
    """What a client thread asks of the scheduler that runs it (contend.schedule.scheduler's
    Scheduler): the baton, the clock, and the record of the step under way."""

    vclock: float
    wall_base: float
    clients: list[ClientHandle]
    trace: list[TraceEntry]
    _lock: threading.Lock

    def _yield_from(self, client: ClientHandle) -> None: ...

    def _wait_for_turn(self, client: ClientHandle) -> None: ...

    def _finish(self, client: ClientHandle, outcome: OperationResult) -> None: ...

    def _adopt(self, parent: ClientHandle, thread: threading.Thread) -> None: ...

    def _script_cache_miss(self, client: ClientHandle, commands: list[list[str]]) -> bool: ...

    def _begin_round_trip(self, client: ClientHandle) -> None: ...

    def _record_reply(self, client: ClientHandle, reply: Any) -> None: ...

    def _reply_lost(
        self, client: ClientHandle, kind: LostReply, commands: list[list[str]], replies: list[Any]
    ) -> None: ...

    def _note_wake(self, client: ClientHandle, seconds: float) -> None: ...


class ClientHandle:
    """The scheduler's side of one client thread."""

    def __init__(self, scheduler: Controller, index: int, name: str, *, own_thread: bool = True) -> None:
        self.scheduler = scheduler
        self.index = index
        self.name = name
        #: Threads its code started, each a client of its own (`Scheduler._adopt`), and for such a
        #: thread, the client whose code started it.
        self.children: list[ClientHandle] = []
        self.parent: ClientHandle | None = None
        self.status = Status.IDLE
        self.pending: list[list[str]] = []
        self.wake_at = 0.0
        self.skew = 0.0
        self.read_wall_clock = False  # has its code asked for time.time()? Then skew matters to it.
        self.operation: str = ""
        self.connection: Any = None
        self.outcome = OperationResult()
        #: Where the scheduler asked this client's task to be cancelled (async clients only).
        self.cancel_at: CancelAt | None = None
        #: The client's own event loop, made on its first coroutine (contend.schedule.async_gate).
        self.aloop: VirtualClockLoop | None = None
        #: host:port of the server its next round trip goes to.
        self.pending_node = ""
        #: Servers (host:port) it cannot reach, and why (gating.PARTITION, PAUSED, DOWN): a round
        #: trip there fails before it is sent, as redis-py would report it.
        self.unreachable: dict[str, str] = {}
        #: The task running the client's operation: the one a scheduled cancellation cancels.
        self.op_task: asyncio.Task[Any] | None = None
        #: Lose the reply of the round trip this step sends (set by `Scheduler.step`).
        self.lose_reply: LostReply | None = None
        #: ... moved to the script sent again after a NOSCRIPT reply, within the same step.
        self.loss_after_noscript: LostReply | None = None
        #: The last round trip whose reply was lost: (what it sent, the retry call it was in, its step).
        self.lost_round_trip: tuple[list[list[str]], object | None, int] | None = None
        self._work: Callable[[], Any] | None = None
        #: Signalled when the baton comes to this client (on the scheduler's lock: only the
        #: thread whose turn it is wakes, not every client's).
        self._turn_cv = threading.Condition(scheduler._lock)
        self._has_work = threading.Event()
        if own_thread:
            self._thread = threading.Thread(target=self._loop, name=f"contend-client-{name}", daemon=True)
            self._thread.start()

    # Called in the client thread (through the gate) ---------------------------
    def before_round_trip(self, commands: list[list[str]], node: str = "") -> None:
        self._check_alive()
        if self.scheduler._script_cache_miss(self, commands):
            return  # part of the step under way: loading a script the server had not cached
        self.loss_after_noscript = None  # a new step: a loss moved within the last one ends there
        self.pending = commands
        self.pending_node = node
        self.status = Status.READY
        self.scheduler._yield_from(self)
        self._check_alive()
        self.scheduler._begin_round_trip(self)

    def record_reply(self, reply: Any) -> None:
        self.scheduler._record_reply(self, reply)

    def take_lost_reply(self, commands: list[list[str]]) -> LostReply | None:
        """Client thread: should the reply of the round trip being sent (`commands`) be lost?
        (Asked once; after a NOSCRIPT, asked again of the script sent once it is loaded.)"""
        if self.loss_after_noscript is not None:
            if not is_script_run(commands):
                return None  # the SCRIPT LOAD in between: its reply arrives
            moved, self.loss_after_noscript = self.loss_after_noscript, None
            return moved
        lose, self.lose_reply = self.lose_reply, None
        return lose

    def lose_after_noscript(self, kind: LostReply) -> None:
        """Client thread: the round trip whose reply was to be lost ran nothing (the server had
        not cached its script): lose the reply of the script once loaded and sent again, within
        the same step. A cold script cache must not turn an applied round trip into one that was
        not (an example run again, on a warm cache, would otherwise go another way)."""
        self.loss_after_noscript = kind

    def reply_lost(self, kind: LostReply, commands: list[list[str]], replies: list[Any]) -> None:
        """Client thread: the server ran `commands` and answered `replies`, which never arrive."""
        self.scheduler._reply_lost(self, kind, commands, replies)

    def sleep(self, seconds: float) -> None:
        self._check_alive()
        self.wake_at = self.scheduler.vclock + seconds
        self.status = Status.SLEEPING
        self.scheduler._yield_from(self)
        self._check_alive()
        self.scheduler._note_wake(self, seconds)

    @property
    def crashed(self) -> bool:
        return self.status is Status.CRASHED

    @property
    def adopted(self) -> bool:
        """Is this a thread the code under test started (not one of the harness's clients)?"""
        return self.parent is not None

    @property
    def ended(self) -> bool:
        """Has its thread (one the code started) run to its end, or crashed?"""
        return self.status in (Status.ENDED, Status.CRASHED)

    def adopt(self, thread: threading.Thread) -> None:
        """Client thread: its code is starting `thread`; make it a client of its own."""
        self.scheduler._adopt(self, thread)

    def wall_time(self, read: bool = True) -> float:
        """Its wall clock now; `read`: the code read it (then clock skew matters to it)."""
        self.read_wall_clock |= read
        return self.scheduler.wall_base + self.scheduler.vclock + self.skew

    def wall_time_ns(self, read: bool = True) -> int:
        """`wall_time` in whole nanoseconds, added up in integers: a float of 1.7e9 s keeps only
        about 240 ns, and 1 ms of virtual time read through it could come out as 0.999936 ms."""
        self.read_wall_clock |= read
        return round(self.scheduler.wall_base * 1e9) + round((self.scheduler.vclock + self.skew) * 1e9)

    def _check_alive(self) -> None:
        if self.status is Status.CRASHED:
            raise ClientCrashed(self.name)

    def _loop(self) -> None:
        bind(self)
        while True:
            REAL_EVENT_WAIT(self._has_work)
            self._has_work.clear()
            work = self._work
            if work is None:
                self._close_loop()
                return
            self.scheduler._wait_for_turn(self)
            try:
                value = work()
                if inspect.iscoroutine(value):
                    value = self._run_coroutine(value)
                outcome = OperationResult(value=value, done=True)
            except ClientCrashed:
                outcome = OperationResult(error=None, done=False)
            except BaseException as exc:
                outcome = OperationResult(error=exc, done=True)
            self.scheduler._finish(self, outcome)

    def _run_coroutine(self, coroutine: Any) -> Any:
        """An async operation: run it to the end on this client's own loop (made once, kept,
        since the client's redis.asyncio connections belong to it)."""
        if self.aloop is None:
            self.aloop = VirtualClockLoop(self)
        asyncio.set_event_loop(self.aloop)
        self.op_task = self.aloop.create_task(coroutine)
        try:
            return self.aloop.run_until_complete(self.op_task)
        finally:
            self.op_task = None

    def _close_loop(self) -> None:
        loop, self.aloop = self.aloop, None
        if loop is None or loop.is_closed():
            return
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for task in pending:
                task.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        except BaseException:  # a loop in a bad state is closed anyway
            pass
        finally:
            loop.close()

    def _submit(self, work: Callable[[], Any] | None) -> None:
        self._work = work
        self._has_work.set()
