"""What the two gates (contend.schedule.gate for redis-py, async_gate for redis.asyncio) share:
which scheduled client a thread runs, the real clock, how a blocking pop or read is polled, how a
cancellation is placed, and how a round trip's payload reads. Neither gate imports the other,
nor the scheduler: the scheduler installs both (`contend.schedule.scheduler`).
"""

from __future__ import annotations

import asyncio
import contextvars
import enum
import threading
import time
from typing import Any, Protocol

import redis


class LostReply(enum.Enum):
    """How a reply is lost after the server ran the round trip: what the client then sees."""

    CONNECTION = "ConnectionError"  # the connection dropped (a network fault, the server's side closed)
    TIMEOUT = "TimeoutError"  # the client gave up waiting (socket_timeout) and dropped the connection

    def error(self, commands: list[list[str]]) -> Exception:
        """The exception redis-py raises in this case, naming what the server had already run."""
        what = "; ".join(" ".join(cmd[:2]) for cmd in commands[:3]) + (" …" if len(commands) > 3 else "")
        if self is LostReply.TIMEOUT:
            return redis.TimeoutError(f"Timeout reading from socket (contend: the reply to {what} was lost)")
        return redis.ConnectionError(f"Connection closed by server. (contend: the reply to {what} was lost)")


def is_noscript(reply: Any) -> bool:
    """A NOSCRIPT error reply (redis-py's NoScriptError, or the error as text)."""
    return isinstance(reply, BaseException) and (
        type(reply).__name__ == "NoScriptError" or str(reply).startswith(("NOSCRIPT", "No matching script"))
    )


def is_script_run(commands: list[list[str]]) -> bool:
    """One command that runs a script (EVAL, EVALSHA and their _RO forms)."""
    return len(commands) == 1 and bool(commands[0]) and str(commands[0][0]).upper().startswith("EVAL")


def ran_nothing(commands: list[list[str]], replies: list[Any]) -> bool:
    """Did the server run nothing of a round trip whose reply was to be lost, because the one
    script it was sent was not in its cache (NOSCRIPT)? redis-py then loads the script and sends
    it again: the lost reply is that one's (GatedClient.lose_after_noscript)."""
    return is_script_run(commands) and len(replies) == 1 and is_noscript(replies[0])


class SchedulerView(Protocol):
    """What the gates ask of the scheduler."""

    split_pipelines: bool

    @property
    def closed(self) -> bool: ...

    def monotonic(self) -> float: ...

    def note_cancelled(self, client: Any, where: str) -> None: ...


class GatedClient(Protocol):
    """What the gates ask of a scheduled client (contend.schedule.client.ClientHandle)."""

    name: str
    unreachable: dict[str, str]
    cancel_at: CancelAt | None
    op_task: asyncio.Task[Any] | None

    @property
    def scheduler(self) -> SchedulerView: ...

    @property
    def crashed(self) -> bool: ...

    def take_lost_reply(self, commands: list[list[str]]) -> LostReply | None: ...

    def lose_after_noscript(self, kind: LostReply) -> None: ...

    def reply_lost(self, kind: LostReply, commands: list[list[str]], replies: list[Any]) -> None: ...

    def before_round_trip(self, commands: list[list[str]], node: str = "") -> None: ...

    def record_reply(self, reply: Any) -> None: ...

    def sleep(self, seconds: float) -> None: ...

    def wall_time(self, read: bool = True) -> float: ...

    def wall_time_ns(self, read: bool = True) -> int: ...

    def adopt(self, thread: threading.Thread) -> None: ...

    @property
    def parent(self) -> GatedClient | None: ...


def same_process(a: GatedClient, b: GatedClient) -> bool:
    """Are two scheduled clients threads of one process (one started the other, or both were
    started from the same client's code)? They share its connection pools."""

    def root(client: GatedClient) -> GatedClient:
        while client.parent is not None:
            client = client.parent
        return client

    return root(a) is root(b)


BLOCKING_POPS = frozenset({"BLPOP", "BRPOP", "BLMOVE", "BRPOPLPUSH", "BZPOPMIN", "BZPOPMAX"})
POLL_INTERVAL = 0.01  # virtual seconds between polls of a blocking pop, at first
MAX_POLL_INTERVAL = 0.16  # ... and at most

_local = threading.local()

REAL_SLEEP = time.sleep
REAL_MONOTONIC = time.monotonic
REAL_TIME = time.time
REAL_PERF_COUNTER = time.perf_counter
REAL_EVENT_WAIT = threading.Event.wait


#: The redis-py `Retry.call_with_retry` call this code runs inside (a new object per call), so a
#: resend after a lost reply can be told apart: redis-py's own retry resends inside the call in
#: which the error was raised; code that catches the error and tries again makes a new call.
_retry_call: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "contend_retry_call", default=None
)


#: Why a client cannot reach a server (`ClientHandle.unreachable`): what it sees before sending.
PARTITION = "a network partition"
PAUSED = "the server is paused"
DOWN = "the server is down"


def unreachable_error(client: str, node: str, why: str) -> Exception:
    """What redis-py raises for a round trip to a server the client cannot reach: a paused server
    times out, a partitioned or dead one refuses or drops the connection."""
    if why == PAUSED:
        return redis.TimeoutError(f"Timeout reading from {node} ({client}: {why})")
    return redis.ConnectionError(f"Error connecting to {node} ({client}: {why})")


def retry_call() -> object | None:
    """The redis-py retry call under way in this thread or task, if any."""
    return _retry_call.get()


def enter_retry_call() -> contextvars.Token[object | None]:
    """A redis-py retry call begins (the gates wrap `Retry.call_with_retry` with this)."""
    return _retry_call.set(object())


def leave_retry_call(token: contextvars.Token[object | None]) -> None:
    _retry_call.reset(token)


def current() -> GatedClient | None:
    """The scheduled client this thread runs, if any."""
    return getattr(_local, "client", None)


def bind(client: GatedClient | None) -> None:
    """This thread runs `client` (None: no scheduled client)."""
    _local.client = client


def node_of(conn: Any) -> str:
    """host:port of a connection's server ("" for a unix socket)."""
    port = getattr(conn, "port", None)
    return f"{getattr(conn, 'host', '')}:{port}" if port else ""


#: Blocking pops, each with the command (or script) that does one non-blocking pass.
_POP_ONCE = {
    "BLPOP": "LPOP",
    "BRPOP": "RPOP",
    "BZPOPMIN": "ZPOPMIN",
    "BZPOPMAX": "ZPOPMAX",
}
# KEYS: the lists (or sorted sets) in the order the blocking pop names them. ARGV[1]: the
# non-blocking pop (LPOP, RPOP, ZPOPMIN, ZPOPMAX). {key, element[, score]} from the first
# non-empty key, as the blocking pop would answer, or false when all are empty.
_POP_SCRIPT = """
for _, key in ipairs(KEYS) do
    local got = redis.call(ARGV[1], key)
    if got and (type(got) ~= 'table' or #got > 0) then
        if type(got) == 'table' then return {key, got[1], got[2]} end
        return {key, got}
    end
end
return false
"""


def one_pass(name: str, operands: tuple[Any, ...]) -> tuple[Any, ...]:
    """The non-blocking command doing what a blocking pop does when data is there."""
    if name == "BRPOPLPUSH":
        return ("RPOPLPUSH", *operands)
    if name == "BLMOVE":
        return ("LMOVE", *operands)
    return ("EVAL", _POP_SCRIPT, len(operands), *operands, _POP_ONCE[name])


#: Stream reads that block when given BLOCK <ms> (0: without end).
BLOCKING_READS = frozenset({"XREAD", "XREADGROUP"})


def polled(args: tuple[Any, ...]) -> tuple[float, tuple[Any, ...]] | None:
    """A command that would block the server, as (timeout in seconds, 0: no end; the command that
    does one non-blocking pass of it); None for any other command. The blocking pops name their
    timeout last; XREAD and XREADGROUP block with BLOCK <ms>, and without it answer at once (nil
    when there is nothing new, as the blocking form answers at its timeout)."""
    name = str(args[0]).upper() if args else ""
    if name in BLOCKING_POPS:
        return float(args[-1]), one_pass(name, args[1:-1])
    if name in BLOCKING_READS:
        words = [_word(a) for a in args]
        if "BLOCK" in words[: _streams_at(words)]:
            at = words.index("BLOCK")
            return float(args[at + 1]) / 1000, (*args[:at], *args[at + 2 :])
    return None


def nothing_yet(reply: Any) -> bool:
    """Did one pass of a polled command find nothing (nil; an empty answer to a stream read)?"""
    return reply is None or (isinstance(reply, list | dict) and not reply)


def _word(arg: Any) -> str:
    """A command's argument as an upper-case keyword (redis-py sends some as bytes)."""
    if isinstance(arg, bytes):
        return arg.decode(errors="replace").upper()
    return str(arg).upper()


def _streams_at(words: list[str]) -> int:
    """Where the STREAMS keyword is (options come before it; keys and ids after)."""
    return words.index("STREAMS") if "STREAMS" in words else len(words)


class CancelAt(enum.Enum):
    """Where a scheduled cancellation lands in the client's operation."""

    BEFORE_SEND = "before its command is sent"
    AFTER_SEND = "after its command is sent, while it awaits the reply"
    SLEEPING = "while it sleeps between round trips"
