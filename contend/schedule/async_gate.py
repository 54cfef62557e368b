"""The gate for `redis.asyncio`: the same steps as the synchronous gate, for async code.

Each scheduled client runs in a thread of its own (as for synchronous code) with an
event loop of its own, `VirtualClockLoop` (contend.schedule.event_loop), which lives as
long as the client: its connections belong to that loop, and a reply it is owed, or a
connect, is waited for before another of its tasks runs (`read_response` below notes
which reads are owed). A client's coroutine runs on its loop; when it
reaches a round trip, the patched `send_packed_command` hands the baton back to the
scheduler *synchronously*, so the client's whole loop stands still until its next
turn. Only one client runs at any moment, and the same choices give the same outcome.

Patched, only in scheduled client threads (others pass through untouched):

* `redis.asyncio.connection.AbstractConnection.send_packed_command`: one step per
  round trip (a command, a pipeline, a MULTI/EXEC block), as in the sync gate; the
  connection handshake is not gated (`on_connect_check_health`).
* `AbstractConnection.read_response`: the replies, for the trace; a round trip marked lost is
  run by the server, then its reply is dropped with the connection, as in the sync gate.
* `Retry.call_with_retry` and `redis.asyncio.retry`'s sleep: followed, and virtual (a
  RedisCluster's `execute_command` and pipeline `execute`, which resend in loops of their own,
  are followed too).
* `redis.asyncio.client.Redis.execute_command`: blocking pops (BLPOP, BRPOP, ...) and
  XREAD/XREADGROUP with BLOCK become polls on virtual time, as in the sync gate: the server is never left blocking.
* A redis.asyncio cluster client's discovery of the cluster (CLUSTER SLOTS and COMMAND, on
  its first command and after a redirection makes it look again:
  `NodesManager.initialize`, `AsyncCommandsParser.initialize`) is no step either, as a
  handshake is not: the sync cluster client does it when it is made, before any schedule.
* `asyncio.sleep(d)` with d > 0: a virtual sleep (the scheduler's clock), as
  `time.sleep` is in the sync gate; `asyncio.sleep(0)` stays a plain yield to the loop.
* The loop's clock (`loop.time()`) is the scheduler's virtual monotonic clock, so
  `asyncio.wait_for`, `asyncio.timeout` and every `call_later` run on virtual time.

Cancellation as a fault (`Scheduler.cancel`): the client's own task is cancelled at a
chosen await, exactly as `task.cancel()` from outside would land there: before a round
trip's command is sent, after it is sent and before its reply is read, or while the
client sleeps between round trips.
"""

from __future__ import annotations

import asyncio
import contextvars
from typing import Any

import redis
import redis._parsers
import redis.asyncio.client
import redis.asyncio.cluster
import redis.asyncio.connection
import redis.asyncio.retry

from contend.schedule.gating import (
    MAX_POLL_INTERVAL,
    POLL_INTERVAL,
    CancelAt,
    GatedClient,
    LostReply,
    current,
    enter_retry_call,
    leave_retry_call,
    node_of,
    nothing_yet,
    polled,
    ran_nothing,
    unreachable_error,
)
from contend.servers.payload import decode_packed

REAL_ASYNC_SLEEP = asyncio.sleep
_originals: dict[str, Any] = {}
#: Set in the task of a cluster client finding out the cluster's layout (not a thread-local: on
#: one loop, another task of the same client may send a gated command meanwhile).
_discovering: contextvars.ContextVar[bool] = contextvars.ContextVar("contend_discovering", default=False)
#: Set while a connection says hello (HELLO, CLIENT SETINFO): per task, not per thread, as a
#: cluster client connects to several nodes at once from tasks of one loop (a script loaded on
#: every node), and one task's handshake ending must not make another's count as steps.
_handshaking: contextvars.ContextVar[bool] = contextvars.ContextVar("contend_handshaking", default=False)
#: What a cluster client calls to find out the cluster's layout: (holder, attribute).
_DISCOVERY = (
    (redis.asyncio.cluster.NodesManager, "initialize"),
    (redis._parsers.AsyncCommandsParser, "initialize"),
)

#: A redis.asyncio RedisCluster resends in loops of its own, not through Retry.call_with_retry:
#: each call of these is followed as one redis-py retry call, so its resends are told apart.
_CLUSTER_RETRY_LOOPS: tuple[tuple[type, str], ...] = (
    (redis.asyncio.cluster.RedisCluster, "execute_command"),
    (redis.asyncio.cluster.ClusterPipeline, "execute"),
)


def patch() -> None:
    """Install the patches (the scheduler installs the gates, reference counted)."""
    conn_cls = redis.asyncio.connection.AbstractConnection
    _originals["send"] = conn_cls.send_packed_command
    _originals["read"] = conn_cls.read_response
    _originals["handshake"] = conn_cls.on_connect_check_health
    _originals["execute"] = redis.asyncio.client.Redis.execute_command
    redis.asyncio.client.Redis.execute_command = _polled_execute  # type: ignore[method-assign]
    conn_cls.send_packed_command = _gated_send  # type: ignore[method-assign]
    conn_cls.read_response = _recorded_read  # type: ignore[method-assign]
    conn_cls.on_connect_check_health = _ungated_handshake  # type: ignore[method-assign]
    for holder, name in _DISCOVERY:
        original = _originals[f"{holder.__name__}.{name}"] = getattr(holder, name)
        setattr(holder, name, _ungated_discovery(original))
    _originals["call_with_retry"] = redis.asyncio.retry.Retry.call_with_retry
    redis.asyncio.retry.Retry.call_with_retry = _tracked_retry  # type: ignore[method-assign]
    for loop_holder, name in _CLUSTER_RETRY_LOOPS:
        original = _originals[f"{loop_holder.__name__}.{name}"] = getattr(loop_holder, name)
        setattr(loop_holder, name, _tracked_retry_loop(original))
    asyncio.sleep = _sleep  # type: ignore[assignment]
    # redis.asyncio's Retry sleeps between attempts with an asyncio.sleep it imported by name.
    redis.asyncio.retry.sleep = _sleep  # type: ignore[attr-defined]


def unpatch() -> None:
    """Undo `patch`."""
    conn_cls = redis.asyncio.connection.AbstractConnection
    conn_cls.send_packed_command = _originals["send"]  # type: ignore[method-assign]
    conn_cls.read_response = _originals["read"]  # type: ignore[method-assign]
    conn_cls.on_connect_check_health = _originals["handshake"]  # type: ignore[method-assign]
    redis.asyncio.client.Redis.execute_command = _originals["execute"]  # type: ignore[method-assign]
    for holder, name in _DISCOVERY:
        setattr(holder, name, _originals[f"{holder.__name__}.{name}"])
    redis.asyncio.retry.Retry.call_with_retry = _originals["call_with_retry"]  # type: ignore[method-assign]
    for loop_holder, name in _CLUSTER_RETRY_LOOPS:
        setattr(loop_holder, name, _originals[f"{loop_holder.__name__}.{name}"])
    asyncio.sleep = REAL_ASYNC_SLEEP
    redis.asyncio.retry.sleep = REAL_ASYNC_SLEEP  # type: ignore[attr-defined]


def _scheduled() -> GatedClient | None:
    """The scheduled client whose loop runs this code, if any (not during a handshake)."""
    client = current()
    if client is None or _handshaking.get() or _discovering.get():
        return None
    return client


async def _cancel_here(client: GatedClient, where: CancelAt) -> None:
    """If the scheduler asked for a cancellation at `where`, cancel the client's operation task
    now, as a `task.cancel()` from outside would: when this code runs in that task, the
    CancelledError comes out of this await; when it runs in a task the operation awaits through
    `asyncio.shield`, that task goes on and only the operation's wait is cancelled."""
    if client.cancel_at is not where:
        return
    client.cancel_at = None
    client.scheduler.note_cancelled(client, where.value)
    task = client.op_task or asyncio.current_task()
    if task is not None:
        task.cancel()
    await REAL_ASYNC_SLEEP(0)


async def _gated_send(self: Any, command: Any, check_health: bool = True) -> None:
    client = _scheduled()
    if client is None:
        return await _originals["send"](self, command, check_health)  # type: ignore[no-any-return]
    owner = getattr(self, "_contend_owner", None)
    if owner is None or owner.scheduler.closed:
        self._contend_owner = owner = client
    if owner is not client:  # another client's connection, reached through garbage collection
        return await _originals["send"](self, command, check_health)  # type: ignore[no-any-return]
    if client.crashed:
        raise redis.ConnectionError(f"client {client.name} crashed")
    commands = decode_packed(command)
    node = node_of(self)
    client.before_round_trip(commands, node)  # blocks until its turn
    if node and node in client.unreachable:
        error = unreachable_error(client.name, node, client.unreachable[node])
        client.record_reply(error)
        raise error
    # Where a real cancellation lands before the send: redis-py awaits the pool for the
    # connection first, and returns the connection, nothing sent, when cancelled there.
    await _cancel_here(client, CancelAt.BEFORE_SEND)
    lose = client.take_lost_reply(commands)
    await _originals["send"](self, command, check_health)
    if lose is not None:
        self._contend_lost = (lose, commands)  # the reply is read, then lost, by _recorded_read


async def _recorded_read(self: Any, *args: Any, **kwargs: Any) -> Any:
    owed = _owed_on_loop(self, args, kwargs)
    try:
        return await _record_read(self, *args, **kwargs)
    finally:
        if owed is not None:
            owed.pop(id(self), None)


def _owed_on_loop(conn: Any, args: Any, kwargs: Any) -> dict[int, Any] | None:
    """In a scheduled client's loop, note that `conn` waits for a reply the server owes (not a
    pub/sub wait, which passes a timeout or push_request): the loop waits for it before it runs
    another task (contend.schedule.event_loop). The loop's book of owed reads, or None."""
    if current() is None:
        return None
    timeout = kwargs.get("timeout", args[1] if len(args) > 1 else None)
    if timeout is not None or kwargs.get("push_request"):
        return None
    owed: dict[int, Any] | None = getattr(asyncio.get_running_loop(), "owed_reads", None)
    if owed is not None:
        owed[id(conn)] = conn
    return owed


async def _record_read(self: Any, *args: Any, **kwargs: Any) -> Any:
    client = _scheduled()
    lost = getattr(self, "_contend_lost", None)
    if lost is not None:
        self._contend_lost = None
        if client is not None:
            await _lose_reply(self, client, lost[0], lost[1], args, kwargs)
    try:
        if client is not None and client.cancel_at is CancelAt.AFTER_SEND:
            reply = await _read_cancelled(self, client, *args, **kwargs)
        else:
            reply = await _originals["read"](self, *args, **kwargs)
    except redis.ResponseError as exc:
        if client is not None:
            client.record_reply(exc)
        raise
    if client is not None:
        client.record_reply(reply)
    return reply


async def _lose_reply(
    conn: Any, client: GatedClient, kind: LostReply, commands: list[list[str]], args: Any, kwargs: Any
) -> None:
    """The server has run the round trip: read every reply it sends (so its effect is complete),
    then drop the connection and raise what redis-py raises when a reply never arrives."""
    replies: list[Any] = []
    for _ in range(max(1, len(commands))):
        try:
            replies.append(await _originals["read"](conn, *args, **kwargs))
        except redis.ResponseError as exc:
            replies.append(exc)
    if ran_nothing(commands, replies):
        client.lose_after_noscript(kind)
        client.record_reply(replies[0])
        raise replies[0]
    client.reply_lost(kind, commands, replies)
    await conn.disconnect()
    raise kind.error(commands)


async def _tracked_retry(self: Any, do: Any, fail: Any, *args: Any, **kwargs: Any) -> Any:
    """redis.asyncio's Retry.call_with_retry, noting which retry call the code runs inside."""
    token = enter_retry_call()
    try:
        return await _originals["call_with_retry"](self, do, fail, *args, **kwargs)
    finally:
        leave_retry_call(token)


def _tracked_retry_loop(method: Any) -> Any:
    """A cluster client's command or pipeline call, run as one redis-py retry call."""

    async def tracked(*args: Any, **kwargs: Any) -> Any:
        token = enter_retry_call()
        try:
            return await method(*args, **kwargs)
        finally:
            leave_retry_call(token)

    return tracked


async def _read_cancelled(conn: Any, client: GatedClient, *args: Any, **kwargs: Any) -> Any:
    """redis-py's read_response, with the cancellation landing where a real one does while the
    reply is awaited: in its parser's read, inside read_response's own error handling (which
    drops the connection, since the reply is left unread)."""
    parser = conn._parser
    read = parser.read_response

    async def cancelled(*a: Any, **k: Any) -> Any:
        await _cancel_here(client, CancelAt.AFTER_SEND)
        return await read(*a, **k)

    parser.read_response = cancelled
    try:
        return await _originals["read"](conn, *args, **kwargs)
    finally:
        if parser.read_response is cancelled:
            del parser.read_response


async def _ungated_handshake(self: Any, *args: Any, **kwargs: Any) -> Any:
    token = _handshaking.set(True)
    try:
        return await _originals["handshake"](self, *args, **kwargs)
    finally:
        _handshaking.reset(token)


def _ungated_discovery(original: Any) -> Any:
    """`original` (a cluster client's discovery) with its round trips ungated and unrecorded; a
    crashed client's refused, as its commands are."""

    async def discover(self: Any, *args: Any, **kwargs: Any) -> Any:
        client = current()
        if client is not None and client.crashed:
            raise redis.ConnectionError(f"client {client.name} crashed")
        token = _discovering.set(True)
        try:
            return await original(self, *args, **kwargs)
        finally:
            _discovering.reset(token)

    return discover


async def _polled_execute(self: Any, *args: Any, **options: Any) -> Any:
    """A blocking pop of a scheduled client: one non-blocking pass, repeated after a virtual sleep
    until it gets an element or the caller's timeout has passed in virtual time."""
    execute = _originals["execute"]
    blocking = polled(args) if _scheduled() is not None else None
    if blocking is None:
        return await execute(self, *args, **options)
    loop = asyncio.get_running_loop()
    timeout, once = blocking
    deadline = None if timeout == 0 else loop.time() + timeout
    pause = POLL_INTERVAL
    while True:
        reply = await execute(self, *once, **(options if once[0] == args[0] else {}))
        if not nothing_yet(reply):
            return reply
        if deadline is not None and loop.time() >= deadline:
            return None
        await _sleep(pause if deadline is None else min(pause, deadline - loop.time()))
        pause = min(pause * 2, MAX_POLL_INTERVAL)


async def _sleep(delay: float, result: Any = None) -> Any:
    client = _scheduled()
    if client is None or delay <= 0:
        return await REAL_ASYNC_SLEEP(delay, result)
    loop = asyncio.get_running_loop()
    wake = loop.time() + delay
    client.sleep(delay)  # virtual: the baton goes back until the clock reaches the wake-up time
    await _cancel_here(client, CancelAt.SLEEPING)
    # Then wake as asyncio.sleep does, by a timer: timers that came due earlier while the clock
    # jumped (a wait_for's timeout) fire first, in the order they would have in real time.
    woken = loop.create_future()
    handle = loop.call_at(wake, _set_unless_cancelled, woken, result)
    try:
        return await woken
    finally:
        handle.cancel()


def _set_unless_cancelled(future: asyncio.Future[Any], result: Any) -> None:
    if not future.cancelled():
        future.set_result(result)


async def drain() -> None:
    """Let the client's loop finish the tasks still pending on it (a shielded delete), as a
    running program's loop would; bounded in virtual time (the loop's clock is the scheduler's)."""
    me = asyncio.current_task()
    pending = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    if pending:
        await asyncio.wait(pending, timeout=30)
