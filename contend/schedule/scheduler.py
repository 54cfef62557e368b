"""A controlled scheduler: one Redis round trip at a time, in an order the caller chooses.

Each logical client runs in a thread of its own with a connection of its own.
Only one thread runs at any moment: the controller (the test) grants a client
a *step*, the client performs exactly one round trip (a command, a pipeline or
a MULTI/EXEC block) plus the local code up to its next round trip, and hands
control back. Because nothing else runs meanwhile, the same sequence of
choices gives the same outcome, and a failing sequence can be replayed.

Waits are virtual (see `contend.schedule.gate`): `time.sleep` in a client is a
yield that ends when the scheduler's clock reaches its wake-up time; the clock
advances by `step_cost` per step and jumps forward when every live client is
asleep (or the harness calls `advance`). Given the servers' clock
(contend.servers.clock), the scheduler sets the servers' time to its own at every
change: TIME, TTLs and expiry on the server follow the clients' virtual time, and
nothing is rewritten after the fact. Blocking pops are polled. A client blocked
on anything else (a Python lock held by another client, a socket read with no
reply) is not recognised and makes `step` raise SchedulerError after
`yield_timeout` real seconds.

Here are the controller's side and the baton; a client thread's side is
contend.schedule.client, the threads the code under test starts are adopted in
contend.schedule.adoption, and the trace's records are contend.schedule.trace.
"""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable, Collection
from typing import Any

from contend.schedule import async_gate, gate
from contend.schedule.adoption import adopt, descendants
from contend.schedule.client import ClientHandle, OperationResult, Status
from contend.schedule.gating import (
    REAL_MONOTONIC,
    REAL_TIME,
    CancelAt,
    LostReply,
    is_noscript,
    retry_call,
)
from contend.schedule.trace import TraceEntry, compress
from contend.servers.clock import ServerClock
from contend.servers.cluster_client import disconnect

_install_lock = threading.Lock()
#: Virtual seconds within which a sleeper's wake-up counts as come (float sums fall short).
_DUE = 1e-9
_installed = 0


def install() -> None:
    """Install both gates, the sync one and the redis.asyncio one (reference counted: one
    `uninstall` undoes one `install`); UnsupportedRedisPy on a redis-py they were not written for."""
    global _installed
    with _install_lock:
        if _installed == 0:
            gate.check_redis_py()
            gate.patch()
            async_gate.patch()
        _installed += 1


def uninstall() -> None:
    """Undo one `install`; the last one removes the gates."""
    global _installed
    with _install_lock:
        _installed -= 1
        if _installed == 0:
            gate.unpatch()
            async_gate.unpatch()


class SchedulerError(RuntimeError):
    """The scheduler cannot go on: a client did not yield, or a step was not allowed."""


class Scheduler:
    """Clients, a virtual clock and the baton that lets exactly one of them run."""

    def __init__(
        self,
        *,
        step_cost: float = 0.001,
        split_pipelines: bool = False,
        yield_timeout: float = 10.0,
        clock: ServerClock | None = None,
    ) -> None:
        self.step_cost = step_cost
        self.split_pipelines = split_pipelines
        self.yield_timeout = yield_timeout
        self.vclock = 0.0
        #: Virtual seconds the clock has jumped (waits and stalls), not counting the cost of steps.
        self.jumped = 0.0
        #: Of those, the seconds the clock jumped because every live client was asleep (waiting
        #: in a retry loop or a blocking call), not because the harness moved it (`advance`).
        self.waited = 0.0
        #: Per client, the seconds the clock jumped while it ran alone (`runnable(among=...)`)
        #: and it, with its threads, was asleep: its own waiting, though the others were held.
        self.waited_alone: dict[int, float] = {}
        #: The servers' clock, which this scheduler drives; the clients' wall clock starts at its
        #: epoch (every example at the same instant), or at real time without one.
        self.clock = clock
        self.wall_base = clock.epoch if clock is not None else REAL_TIME()
        self.mono_base = REAL_MONOTONIC()
        self.clients: list[ClientHandle] = []
        self.trace: list[TraceEntry] = []
        self.schedule: list[int] = []  # the client index of every step, for replay
        self._lock = threading.Lock()
        #: Signalled when the baton comes back to the controller (each client has its own).
        self._cv = threading.Condition(self._lock)
        self._turn: ClientHandle | None = None
        self._current_step: TraceEntry | None = None
        self._closed = False
        #: Called with the number of seconds just before the clock jumps (not for a step's cost),
        #: while the servers still show the time before the jump.
        self.on_jump: Callable[[float], None] | None = None
        #: Called just after the clock jumped (the servers show the time after it).
        self.after_jump: Callable[[], None] | None = None
        install()
        if clock is not None:
            clock.take(self, self.wall_base)

    # Clients and operations ------------------------------------------------------
    def add_client(self, name: str | None = None, *, connection: Any = None) -> int:
        """A new idle client. `connection` (a redis.Redis) is disconnected if the client crashes."""
        handle = ClientHandle(self, len(self.clients), name or f"c{len(self.clients)}")
        handle.connection = connection
        self.clients.append(handle)
        return handle.index

    def start(self, index: int, operation: Callable[[], Any], label: str = "") -> None:
        """Begin `operation` on an idle client; its local code runs up to its first round trip."""
        client = self.clients[index]
        if client.status is not Status.IDLE:
            raise SchedulerError(f"client {client.name} is {client.status.value}, not idle")
        client.operation = label or getattr(operation, "__name__", "operation")
        client.outcome = OperationResult()
        self.trace.append(
            TraceEntry(len(self.trace), client.name, [], vtime=self.vclock, note=f"starts {client.operation}")
        )
        client._submit(operation)
        self._run(client, note=None)

    def runnable(self, among: Collection[int] | None = None) -> list[int]:
        """Clients that can take a step now, after waking sleepers whose time has come. With
        `among`, only those clients count and the others are paused: when none of them is ready,
        the clock jumps to the first one's wake-up even if a paused client is ready to send
        (one client run alone must not wait for ever on a client that is not let run)."""
        live = [
            c
            for c in self.clients
            if c.status in (Status.READY, Status.SLEEPING) and (among is None or c.index in among)
        ]
        # Within a nanosecond counts as due: a clock moved by sums of floats (a pause, then the
        # gap to a sleeper's wake-up) can stop a hair short of it, and no jump would close that.
        due = self.vclock + _DUE
        ready = [c.index for c in live if c.status is Status.READY or c.wake_at <= due]
        if not ready and live:
            gap = min(c.wake_at for c in live) - self.vclock
            if among is None:
                self.waited += max(0.0, gap)
            else:  # the paused clients did not wait, the harness held them; those let run did
                for index in among:
                    self.waited_alone[index] = self.waited_alone.get(index, 0.0) + max(0.0, gap)
            self._jump(gap)
            due = self.vclock + _DUE
            ready = [c.index for c in live if c.status is Status.READY or c.wake_at <= due]
        return ready

    def waited_by(self, index: int) -> float:
        """Virtual seconds client `index` has spent waiting (asleep, with every client that was
        let run), as against time the harness imposed on it (`advance`, or others run alone)."""
        return self.waited + self.waited_alone.get(index, 0.0)

    def step(self, index: int, lose: LostReply | None = None) -> TraceEntry:
        """Let client `index` perform one round trip (or wake from its sleep). With `lose`, the
        server runs the round trip but its reply never reaches the client, which sees the
        connection drop (or time out) as redis-py reports it; `lose` needs a client about to
        send (READY)."""
        client = self.clients[index]
        if index not in self.runnable():
            raise SchedulerError(f"client {client.name} cannot step: it is {client.status.value}")
        if lose is not None and client.status is not Status.READY:
            raise SchedulerError(
                f"client {client.name} is {client.status.value}: it has no round trip to lose"
            )
        step = TraceEntry(len(self.trace), client.name, [], vtime=self.vclock)
        if client.status is Status.READY:
            step.sent = client.pending
            if client.adopted and not client.pending:
                step.note = f"runs ({client.operation})"
        self.trace.append(step)
        self.schedule.append(index)
        self._current_step = step
        client.lose_reply = lose
        try:
            self._run(client, note=None)
        finally:
            client.lose_reply = None  # not taken: the round trip was refused before it was sent
        self._tick(self.step_cost)
        return step

    def cancel(self, index: int, where: CancelAt) -> TraceEntry:
        """Cancel client `index`'s task at `where` (an async client: ready for a round trip, or
        asleep); it runs until its operation ends or it reaches its next round trip or sleep, as
        a step does. A cancellation the code catches and survives is its own business."""
        client = self.clients[index]
        if client.aloop is None:
            raise SchedulerError(f"client {client.name} runs no coroutine: only async code can be cancelled")
        wanted = Status.SLEEPING if where is CancelAt.SLEEPING else Status.READY
        if client.status is not wanted:
            raise SchedulerError(
                f"client {client.name} is {client.status.value}: it cannot be cancelled {where.value}"
            )
        step = TraceEntry(len(self.trace), client.name, [], vtime=self.vclock)
        if where is CancelAt.AFTER_SEND:
            step.sent = client.pending
        self.trace.append(step)
        self.schedule.append(index)
        client.cancel_at = where
        self._current_step = step
        self._run(client, note=None)
        client.cancel_at = None
        self._tick(self.step_cost)
        return step

    def note_cancelled(self, client: ClientHandle, where: str) -> None:
        """Client thread: its task is being cancelled now (the step's trace says where)."""
        step = self._current_step
        if step is None:
            return
        sent = step.sent_text()
        step.note = f"cancelled {where}" + (f" ({sent})" if sent and "after" in where else "")

    def crash(self, index: int) -> None:
        """Abandon the client's operation: it sends nothing more, and its connection dies."""
        client = self.clients[index]
        was = client.status
        client.status = Status.CRASHED
        self.trace.append(TraceEntry(len(self.trace), client.name, [], vtime=self.vclock, note="crashed"))
        if was in (Status.READY, Status.SLEEPING):
            self._run(client, note=None)  # unwinds with ClientCrashed
        for child in client.children:  # the process dies with every thread its code started
            if child.status in (Status.READY, Status.SLEEPING):
                self.crash(child.index)
        if client.connection is not None:
            self._disconnect(client)  # the server sees the process die

    def _disconnect(self, client: ClientHandle) -> None:
        """Close a client's connections; an async client's on its own loop, in its own thread."""
        done = disconnect(client.connection)
        if not inspect.iscoroutine(done):
            return
        if client.aloop is None or client.aloop.is_closed():
            done.close()
            return
        outcome, status = client.outcome, client.status
        client._submit(lambda: done)
        self._run(client, note=None)
        client.outcome, client.status = outcome, status

    def skew(self, index: int, seconds: float) -> None:
        """Move one client's wall clock (time.time) by `seconds` (and its threads', which share it)."""
        client = self.clients[index]
        client.skew += seconds
        for child in descendants(client):
            child.skew += seconds
        self.trace.append(
            TraceEntry(
                len(self.trace), client.name, [], vtime=self.vclock, note=f"clock skewed by {seconds:+g} s"
            )
        )

    def advance(self, seconds: float, note: str = "") -> None:
        """Move the virtual clock forward (sleepers whose time has come become runnable)."""
        self.trace.append(
            TraceEntry(len(self.trace), "--", [], vtime=self.vclock, note=note or f"+{seconds:g} s")
        )
        self._jump(seconds)

    def _jump(self, seconds: float) -> None:
        if self.on_jump is not None and seconds > 0:
            self.on_jump(seconds)
        self.jumped += max(0.0, seconds)
        self._tick(seconds)
        if self.after_jump is not None and seconds > 0:
            self.after_jump()

    def _tick(self, seconds: float) -> None:
        """Move the virtual clock, and the servers' with it."""
        self.vclock += seconds
        if self.clock is not None:
            self.clock.set(self, self.wall_base + self.vclock)

    def note(self, text: str) -> None:
        """Put a harness event (an expiry, a pause) in the trace."""
        self.trace.append(TraceEntry(len(self.trace), "--", [], vtime=self.vclock, note=text))

    def idle(self, index: int) -> bool:
        return self.clients[index].status in (Status.IDLE, Status.CRASHED, Status.ENDED)

    def own_clients(self, index: int) -> list[int]:
        """Client `index` and the threads its code started (at any depth), in client order."""
        return sorted([index, *(c.index for c in descendants(self.clients[index]))])

    def next_alone(self, index: int) -> int | None:
        """The client to step to run client `index` on alone (it, or a thread its code started),
        every other client paused: the clock jumps to its own next wake-up, even while a paused
        client is ready to send. None once its operation has ended or none of them can run."""
        if self.idle(index):
            return None
        ready = self.runnable(among=self.own_clients(index))
        if not ready:
            return None
        return index if index in ready else ready[0]

    def all_idle(self) -> bool:
        return all(self.idle(c.index) for c in self.clients)

    @property
    def closed(self) -> bool:
        return self._closed

    def monotonic(self) -> float:
        return self.mono_base + self.vclock

    def run_all(self, choose: Callable[[int | None, list[int]], int], max_steps: int = 10_000) -> None:
        """Step until every client is idle, asking `choose(current, runnable)` who goes next."""
        current: int | None = None
        for _ in range(max_steps):
            ready = self.runnable()
            if not ready:
                return
            current = choose(current, ready)
            self.step(current)
        raise SchedulerError(f"clients still running after {max_steps} steps (a livelock?)")

    def close(self) -> None:
        """Crash whatever still runs and stop the client threads."""
        if self._closed:
            return
        for client in self.clients:
            if client.status in (Status.READY, Status.SLEEPING):
                self.crash(client.index)
        for client in self.clients:
            if client.aloop is not None and client.connection is not None:
                self._disconnect(client)  # on its own loop, before the loop closes
        for client in self.clients:
            client._submit(None)
        self._closed = True
        uninstall()
        if self.clock is not None:
            self.clock.give_back(self)

    def __enter__(self) -> Scheduler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def format_trace(self) -> str:
        """The trace, a line per step; which node each round trip went to once there are several
        (a Redis Cluster: a MOVED reply and its retry on another node show as such)."""
        nodes = {step.node for step in self.trace if step.node}
        return "\n".join(compress(self.trace, show_nodes=len(nodes) > 1))

    # The baton -------------------------------------------------------------------
    def _run(self, client: ClientHandle, note: str | None) -> None:
        """Controller: hand the baton to `client` and wait until it hands it back."""
        with self._cv:
            self._turn = client
            client._turn_cv.notify()
            deadline = REAL_MONOTONIC() + self.yield_timeout
            while self._turn is not None:
                left = deadline - REAL_MONOTONIC()
                if left <= 0:
                    raise SchedulerError(
                        f"client {client.name} did not reach its next round trip within "
                        f"{self.yield_timeout} s: blocked on something other than Redis?"
                    )
                self._cv.wait(left)
        self._current_step = None

    def _yield_from(self, client: ClientHandle) -> None:
        """Client thread: give the baton back and wait for the next turn."""
        with self._cv:
            self._turn = None
            self._cv.notify()
        self._wait_for_turn(client)

    def _wait_for_turn(self, client: ClientHandle) -> None:
        with client._turn_cv:
            while self._turn is not client:
                client._turn_cv.wait()

    def _finish(self, client: ClientHandle, outcome: OperationResult) -> None:
        with self._cv:
            client.outcome = outcome
            if client.status is not Status.CRASHED:
                client.status = Status.ENDED if client.adopted else Status.IDLE
            client.pending = []
            # A lost round trip is resent within the operation that lost it or not at all: the next
            # operation sending the same commands is no resend.
            client.lost_round_trip = None
            self._turn = None
            self._cv.notify()

    def _adopt(self, parent: ClientHandle, thread: threading.Thread) -> None:
        """Client thread (`parent`'s, holding the baton): its code starts `thread`, which becomes a
        client of its own (contend.schedule.adoption)."""
        adopt(self, parent, thread)

    def _script_cache_miss(self, client: ClientHandle, commands: list[list[str]]) -> bool:
        """Client thread: is this round trip the loading of a script the server had not cached
        (SCRIPT LOAD, and the EVALSHA retried after a NOSCRIPT reply)? Then it belongs to the
        client's step under way, not a step of its own: whether the server's script cache is
        warm changes no data, and must not change how many steps an operation takes (the same
        choices would otherwise give different schedules)."""
        step = self._current_step
        if step is None or step.client != client.name or not step.sent or len(commands) != 1:
            return False
        loading = [str(a).upper() for a in commands[0][:2]] == ["SCRIPT", "LOAD"]
        loaded = [str(a).upper() for a in step.sent[-1][:2]] == ["SCRIPT", "LOAD"]
        missed = bool(step.replies) and is_noscript(step.replies[-1])
        retry = str(commands[0][0]).upper().startswith("EVAL") and (missed or loaded)
        if not (loading or retry):
            return False
        step.sent = [*step.sent, commands[0]]
        return True

    def _begin_round_trip(self, client: ClientHandle) -> None:
        step = self._current_step
        if step is not None:
            step.node = step.node or client.pending_node
        if step is not None and not step.sent:
            step.sent = client.pending
        lost = client.lost_round_trip
        if step is not None and lost is not None and step.sent == lost[0]:
            client.lost_round_trip = None
            step.resend_of = lost[2]
            same_call = lost[1] is not None and lost[1] is retry_call()
            step.resent_by = "redis-py's Retry (the client's retry settings)" if same_call else "the code"
        client.pending = []

    def _record_reply(self, client: ClientHandle, reply: Any) -> None:
        if self._current_step is not None:
            self._current_step.replies.append(reply)

    def _reply_lost(
        self, client: ClientHandle, kind: LostReply, commands: list[list[str]], replies: list[Any]
    ) -> None:
        step = self._current_step
        if step is None:
            return
        step.replies.extend(replies)
        step.lost = kind.value
        client.lost_round_trip = (commands, retry_call(), step.index)

    def _note_wake(self, client: ClientHandle, seconds: float) -> None:
        step = self._current_step
        if step is not None and not step.sent:
            step.note = f"woke after sleeping {seconds:g} s"
