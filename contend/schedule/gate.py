"""The gate: where a scheduled client thread stops before each Redis round trip.

It is installed by patching redis-py's synchronous connection, so it works on
unmodified code, third-party libraries included:

* `AbstractConnection.send_packed_command` is the start of every round trip (a
  single command, a whole pipeline, a MULTI/EXEC block): the thread yields to
  the scheduler there and goes on only when granted a turn. The connection
  handshake (HELLO, AUTH, SELECT, CLIENT SETINFO) is not gated.
* `AbstractConnection.read_response` records the replies for the trace. For a round trip the
  scheduler marks lost (`Scheduler.step(i, lose=...)`), it reads every reply the server sends,
  so the server has run the whole round trip, then drops the connection and raises what
  redis-py raises when a reply never arrives (ConnectionError, or TimeoutError). A script the
  server had not cached ran nothing (NOSCRIPT): the reply lost is then that of the script
  redis-py sends again once loaded, in the same step, so a cold cache changes nothing.
* `Retry.call_with_retry` is followed, and `redis.retry`'s sleep is virtual: after a lost
  reply, the client's own retry settings resend as they would in production, and the trace
  says whether redis-py's Retry or the code itself sent the round trip again. A
  RedisCluster's `execute_command` and its pipeline's `execute` resend in loops of their own:
  they are followed the same way.
* `Pipeline._execute_pipeline`, when the scheduler splits pipelines, sends a
  plain (non-transactional) pipeline one command at a time: one step each, as
  the server may interleave other clients between them.
* `Redis.execute_command` turns blocking pops (BLPOP, BRPOP, BLMOVE,
  BRPOPLPUSH, BZPOPMIN, BZPOPMAX) into polls: one non-blocking pass (LPOP over
  the keys in order in one script, LMOVE, RPOPLPUSH, ...), repeated after a
  virtual sleep until the caller's timeout has passed in virtual time; so do
  XREAD and XREADGROUP with BLOCK (one pass without it). The server is never
  left blocking, so nothing depends on real timing.
* `PubSub.parse_response` (behind `get_message(timeout=...)` and `listen()`)
  polls too: one non-blocking read, then a virtual sleep, until a message
  arrives or the timeout has passed in virtual time. A reply the server surely
  sends (the confirmation of a SUBSCRIBE the client sent, counted by the gated
  `PubSub.execute_command`) is read blocking, in real time: on a busy machine it
  may not have arrived yet, and a poll must not take "not yet" for "none".
* `time.sleep`, `time.monotonic`, `time.time`, `time.time_ns`, `time.perf_counter` and
  `timeit.default_timer` read a virtual clock in scheduled threads: a sleep is a yield that ends when the
  scheduler's clock reaches the wake-up time, so retry loops cost no real time.
  `threading.Event.wait` becomes a virtual poll of the event. Code that
  imported `sleep` or `monotonic` by name before the gate was installed keeps
  the real ones; `time` and `time_ns` imported by name are bound to the virtual
  wall clock while the gate is on (contend.schedule.wall_clock).
* `ThreadPoolExecutor.submit` from a scheduled thread runs the function at
  once in that thread (a done future): a library that fans its commands out
  to worker threads (Redlock over several masters) stays one client whose
  round trips the scheduler orders. `concurrent.futures.as_completed` yields
  such futures in the order they were submitted: its own order is that of a
  set, by the futures' ids, which changes from run to run, and a library that
  stops at a quorum (pottery's Redlock) would otherwise look at another
  master's reply, raise or log on one run and not on the next, on the same
  schedule.

Threads that are not scheduled clients pass through untouched. A connection
belongs to the first client that sends on it; a send on it from another
client's thread (a `__del__` run by the garbage collector there) is not a step
of that client and passes through. Clients must not share a connection pool.
"""

from __future__ import annotations

import concurrent.futures
import itertools
import sys
import threading
import time
import timeit
from collections.abc import Callable, Iterator
from typing import Any

import redis
import redis.client
import redis.cluster
import redis.connection
import redis.retry
import redis.utils

from contend.errors import ContendError
from contend.schedule import wall_clock
from contend.schedule.gating import (
    MAX_POLL_INTERVAL,
    POLL_INTERVAL,
    REAL_EVENT_WAIT,
    REAL_MONOTONIC,
    REAL_PERF_COUNTER,
    REAL_SLEEP,
    REAL_TIME,
    GatedClient,
    LostReply,
    current,
    enter_retry_call,
    leave_retry_call,
    node_of,
    nothing_yet,
    polled,
    ran_nothing,
    same_process,
    unreachable_error,
)
from contend.servers.payload import decode_packed

#: This thread's state inside the gate: in a connection's handshake, or in a real (not virtual) wait.
_flags = threading.local()
_originals: dict[str, Any] = {}


def _in_handshake() -> bool:
    return bool(getattr(_flags, "handshake", False))


#: The redis-py releases (major, minor), first and last, whose internals the gate was written and
#: tested for; pyproject.toml pins redis to the same range.
REDIS_PY_SUPPORTED = ((6, 0), (8, 1))
#: What the gate patches: (holder, attribute).
_PATCHED = (
    (redis.connection.AbstractConnection, "send_packed_command"),
    (redis.connection.AbstractConnection, "read_response"),
    (redis.connection.AbstractConnection, "on_connect_check_health"),
    (redis.client.Pipeline, "_execute_pipeline"),
    (redis.client.Redis, "execute_command"),
)


class UnsupportedRedisPy(ContendError):
    """The installed redis-py is not one the gate was written for."""


def check_redis_py(version: str | None = None) -> None:
    """UnsupportedRedisPy, saying what to install, unless redis-py is in REDIS_PY_SUPPORTED."""
    version = version or redis.__version__
    (lo_major, lo_minor), (hi_major, hi_minor) = REDIS_PY_SUPPORTED
    wanted = f"redis>={lo_major}.{lo_minor},<{hi_major}.{hi_minor + 1}"
    try:
        found = tuple(int(part) for part in version.split(".")[:2])
    except ValueError:
        found = ()
    missing = [f"{holder.__name__}.{name}" for holder, name in _PATCHED if not hasattr(holder, name)]
    if len(found) != 2 or not REDIS_PY_SUPPORTED[0] <= found <= REDIS_PY_SUPPORTED[1] or missing:
        why = f" ({', '.join(missing)} missing)" if missing else ""
        raise UnsupportedRedisPy(
            f"contend's scheduler patches redis-py internals and was written for {wanted}; "
            f"this is redis-py {version}{why}. Install a supported one: pip install '{wanted}'"
        )


#: A RedisCluster resends in loops of its own, not through Retry.call_with_retry: each call of
#: these is followed as one redis-py retry call, so its resends are told from the code's.
#: Pub/sub commands whose replies the server surely sends, and those replies' first words.
_CONFIRMED = frozenset(
    {"subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "ping"}
)
_CONFIRMS = _CONFIRMED | {"pong"}
#: Real seconds a poll of a subscription waits for a reply it is owed (it comes in
#: milliseconds; this bounds a server that died meanwhile).
OWED_REPLY_WAIT = 10.0

_CLUSTER_RETRY_LOOPS = (
    (redis.cluster.RedisCluster, "execute_command"),
    (redis.cluster.ClusterPipeline, "execute"),
)


def patch() -> None:
    """Patch redis-py and time (the scheduler installs the gates, reference counted)."""
    conn_cls = redis.connection.AbstractConnection
    _originals["send"] = conn_cls.send_packed_command
    _originals["read"] = conn_cls.read_response
    _originals["handshake"] = conn_cls.on_connect_check_health
    _originals["pipeline"] = redis.client.Pipeline._execute_pipeline
    _originals["execute"] = redis.client.Redis.execute_command
    _originals["pubsub"] = redis.client.PubSub.parse_response
    _originals["pubsub_execute"] = redis.client.PubSub.execute_command
    _originals["submit"] = concurrent.futures.ThreadPoolExecutor.submit
    _originals["as_completed"] = concurrent.futures.as_completed
    conn_cls.send_packed_command = _gated_send  # type: ignore[method-assign]
    conn_cls.read_response = _recorded_read  # type: ignore[method-assign]
    conn_cls.on_connect_check_health = _ungated_handshake  # type: ignore[method-assign]
    redis.client.Pipeline._execute_pipeline = _split_pipeline  # type: ignore[method-assign]
    redis.client.Redis.execute_command = _polled_execute  # type: ignore[method-assign]
    redis.client.PubSub.parse_response = _polled_pubsub  # type: ignore[method-assign]
    redis.client.PubSub.execute_command = _counted_pubsub_command  # type: ignore[method-assign]
    concurrent.futures.ThreadPoolExecutor.submit = _inline_submit  # type: ignore[method-assign]
    concurrent.futures.as_completed = _submitted_order
    threading.Event.wait = _event_wait  # type: ignore[method-assign]
    _originals["call_with_retry"] = redis.retry.Retry.call_with_retry
    redis.retry.Retry.call_with_retry = _tracked_retry  # type: ignore[method-assign]
    for holder, name in _CLUSTER_RETRY_LOOPS:
        original = _originals[f"{holder.__name__}.{name}"] = getattr(holder, name)
        setattr(holder, name, _tracked_retry_loop(original))
    # redis-py's Retry sleeps between attempts with a `sleep` it imported by name: virtual too.
    redis.retry.sleep = _sleep  # type: ignore[assignment]
    _originals["thread_start"] = threading.Thread.start
    threading.Thread.start = _thread_start  # type: ignore[method-assign]
    _originals["thread_join"] = threading.Thread.join
    threading.Thread.join = _thread_join  # type: ignore[method-assign]
    _originals["lib_version"] = getattr(redis.utils, "get_lib_version", None)
    if _originals["lib_version"] is not None:
        redis.utils.get_lib_version = _lib_version
    time.sleep = _sleep  # type: ignore[assignment]
    time.monotonic = _monotonic
    time.time = _time
    time.time_ns = _time_ns
    time.perf_counter = _perf_counter
    timeit.default_timer = _perf_counter  # what pottery's ContextTimer reads
    # The wall clock a library imported by name (pyrate-limiter's `from time import time_ns`).
    wall_clock.rebind({REAL_TIME: _time, wall_clock.REAL_TIME_NS: _time_ns})


def unpatch() -> None:
    """Undo `patch`."""
    conn_cls = redis.connection.AbstractConnection
    conn_cls.send_packed_command = _originals["send"]  # type: ignore[method-assign]
    conn_cls.read_response = _originals["read"]  # type: ignore[method-assign]
    conn_cls.on_connect_check_health = _originals["handshake"]  # type: ignore[method-assign]
    redis.client.Pipeline._execute_pipeline = _originals["pipeline"]  # type: ignore[method-assign]
    redis.client.Redis.execute_command = _originals["execute"]  # type: ignore[method-assign]
    redis.client.PubSub.parse_response = _originals["pubsub"]  # type: ignore[method-assign]
    redis.client.PubSub.execute_command = _originals["pubsub_execute"]  # type: ignore[method-assign]
    concurrent.futures.ThreadPoolExecutor.submit = _originals["submit"]  # type: ignore[method-assign]
    concurrent.futures.as_completed = _originals["as_completed"]
    threading.Event.wait = REAL_EVENT_WAIT  # type: ignore[method-assign]
    redis.retry.Retry.call_with_retry = _originals["call_with_retry"]  # type: ignore[method-assign]
    for holder, name in _CLUSTER_RETRY_LOOPS:
        setattr(holder, name, _originals[f"{holder.__name__}.{name}"])
    redis.retry.sleep = REAL_SLEEP  # type: ignore[attr-defined]
    threading.Thread.start = _originals["thread_start"]  # type: ignore[method-assign]
    threading.Thread.join = _originals["thread_join"]  # type: ignore[method-assign]
    if _originals["lib_version"] is not None:
        redis.utils.get_lib_version = _originals["lib_version"]
    time.sleep = REAL_SLEEP
    time.monotonic = REAL_MONOTONIC
    time.time = REAL_TIME
    time.time_ns = wall_clock.REAL_TIME_NS
    wall_clock.restore()
    time.perf_counter = REAL_PERF_COUNTER
    timeit.default_timer = REAL_PERF_COUNTER


# Patched redis-py ----------------------------------------------------------
_lib_version_read: list[str] = []


def _lib_version() -> str:
    """redis-py's version, read once: redis-py reads it from the installed package's metadata
    for every connection it makes (for CLIENT SETINFO), which costs more than a round trip, and
    code under test may make new clients in every example."""
    if not _lib_version_read:
        _lib_version_read.append(_originals["lib_version"]())
    return _lib_version_read[0]


def _gated_send(self: Any, command: Any, check_health: bool = True) -> Any:
    client = current()
    if client is not None and not _in_handshake():
        owner = getattr(self, "_contend_owner", None)
        if owner is None or owner.scheduler.closed or same_process(owner, client):
            self._contend_owner = owner = client  # a pool shared with the threads its code started
        if owner is not client:
            # Another client's connection, reached through garbage collection (a
            # Pipeline.__del__ sending UNWATCH) in this thread: not this client's step.
            return _originals["send"](self, command, check_health)
        if client.crashed:
            # Code still unwinding in a crashed client (a finally block, a __del__):
            # a dead process sends nothing, and its connection is gone.
            raise redis.ConnectionError(f"client {client.name} crashed")
        node = node_of(self)
        commands = decode_packed(command)
        client.before_round_trip(commands, node)
        if node and node in client.unreachable:
            error = unreachable_error(client.name, node, client.unreachable[node])
            client.record_reply(error)
            raise error
        lose = client.take_lost_reply(commands)
        sent = _originals["send"](self, command, check_health)
        if lose is not None:
            self._contend_lost = (lose, commands)  # the reply is read, then lost, by _recorded_read
        return sent
    return _originals["send"](self, command, check_health)


def _recorded_read(self: Any, *args: Any, **kwargs: Any) -> Any:
    client = current()
    lost = getattr(self, "_contend_lost", None)
    if lost is not None:
        self._contend_lost = None
        if client is not None:
            _lose_reply(self, client, lost[0], lost[1], args, kwargs)
    try:
        reply = _originals["read"](self, *args, **kwargs)
    except redis.ResponseError as exc:
        if client is not None and not _in_handshake():
            client.record_reply(exc)
        raise
    if client is not None and not _in_handshake():
        client.record_reply(reply)
    return reply


def _lose_reply(
    conn: Any, client: GatedClient, kind: LostReply, commands: list[list[str]], args: Any, kwargs: Any
) -> None:
    """The server has run the round trip: read every reply it sends (so its effect is complete),
    then drop the connection and raise what redis-py raises when a reply never arrives."""
    replies: list[Any] = []
    for _ in range(max(1, len(commands))):
        try:
            replies.append(_originals["read"](conn, *args, **kwargs))
        except redis.ResponseError as exc:
            replies.append(exc)
    if ran_nothing(commands, replies):
        client.lose_after_noscript(kind)
        client.record_reply(replies[0])
        raise replies[0]
    client.reply_lost(kind, commands, replies)
    conn.disconnect()
    raise kind.error(commands)


def _tracked_retry(self: Any, do: Any, fail: Any, *args: Any, **kwargs: Any) -> Any:
    """redis-py's Retry.call_with_retry, noting which retry call the code runs inside."""
    token = enter_retry_call()
    try:
        return _originals["call_with_retry"](self, do, fail, *args, **kwargs)
    finally:
        leave_retry_call(token)


def _tracked_retry_loop(method: Callable[..., Any]) -> Callable[..., Any]:
    """A cluster client's command or pipeline call, run as one redis-py retry call."""

    def tracked(*args: Any, **kwargs: Any) -> Any:
        token = enter_retry_call()
        try:
            return method(*args, **kwargs)
        finally:
            leave_retry_call(token)

    return tracked


def _ungated_handshake(self: Any, *args: Any, **kwargs: Any) -> Any:
    outer = _in_handshake()
    _flags.handshake = True
    try:
        return _originals["handshake"](self, *args, **kwargs)
    finally:
        _flags.handshake = outer


def _split_pipeline(self: Any, connection: Any, commands: Any, raise_on_error: bool) -> Any:
    client = current()
    if client is None or not client.scheduler.split_pipelines or len(commands) < 2:
        return _originals["pipeline"](self, connection, commands, raise_on_error)
    replies: list[Any] = []
    for command in commands:
        replies += _originals["pipeline"](self, connection, [command], False)
    if raise_on_error:
        self.raise_first_error(commands, replies)
    return replies


def _polled_execute(self: Any, *args: Any, **options: Any) -> Any:
    execute: Callable[..., Any] = _originals["execute"]
    blocking = polled(args) if current() is not None else None
    if blocking is None:
        return execute(self, *args, **options)
    timeout, once = blocking
    deadline = None if timeout == 0 else _monotonic() + timeout
    pause = POLL_INTERVAL
    while True:
        reply = execute(self, *once, **(options if once[0] == args[0] else {}))
        if not nothing_yet(reply):
            return reply
        if deadline is not None and _monotonic() >= deadline:
            return None
        _sleep(pause if deadline is None else min(pause, deadline - _monotonic()))
        pause = min(pause * 2, MAX_POLL_INTERVAL)  # a long wait costs few steps


def _counted_pubsub_command(self: Any, *args: Any) -> Any:
    """Send a pub/sub command; from a scheduled client, count the confirmations it is owed
    (one per channel or pattern named; one for a PING)."""
    result = _originals["pubsub_execute"](self, *args)
    name = _command_name(args[0]) if args and current() is not None else ""
    if name in _CONFIRMED:
        self._contend_owed = getattr(self, "_contend_owed", 0) + (
            1 if name == "ping" else max(1, len(args) - 1)
        )
    return result


def _command_name(word: Any) -> str:
    return (word.decode() if isinstance(word, bytes) else str(word)).lower()


def _polled_pubsub(self: Any, block: bool = True, timeout: float = 0) -> Any:
    parse: Callable[..., Any] = _originals["pubsub"]
    if current() is None or (not block and not timeout):
        return parse(self, block=block, timeout=timeout)
    deadline = None if block else _monotonic() + float(timeout)
    while True:
        owed = getattr(self, "_contend_owed", 0)
        reply = parse(self, block=False, timeout=OWED_REPLY_WAIT if owed else 0)
        if reply is not None:
            if owed and isinstance(reply, list | tuple) and reply and _command_name(reply[0]) in _CONFIRMS:
                self._contend_owed = owed - 1
            return reply
        self._contend_owed = 0  # owed and not come in OWED_REPLY_WAIT: no longer waited for
        if deadline is not None and _monotonic() >= deadline:
            return None
        _sleep(POLL_INTERVAL if deadline is None else min(POLL_INTERVAL, max(0.0, deadline - _monotonic())))


def _inline_submit(self: Any, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    if current() is None:
        return _originals["submit"](self, fn, *args, **kwargs)
    future: concurrent.futures.Future[Any] = concurrent.futures.Future()
    future._contend_submitted = next(_SUBMITTED)  # type: ignore[attr-defined]
    try:
        future.set_result(fn(*args, **kwargs))
    except Exception as exc:
        future.set_exception(exc)
    return future


#: The order in which futures were run inline (`_inline_submit`), for `_submitted_order`.
_SUBMITTED = itertools.count()


def _submitted_order(fs: Any, timeout: float | None = None) -> Iterator[concurrent.futures.Future[Any]]:
    """`concurrent.futures.as_completed`, but futures run inline (all done already) come in the
    order they were submitted rather than in a set's order, which follows their ids."""
    futures = list(fs)
    if futures and all(hasattr(f, "_contend_submitted") for f in futures):
        return iter(sorted(set(futures), key=lambda f: f._contend_submitted))
    made: Iterator[concurrent.futures.Future[Any]] = _originals["as_completed"](futures, timeout)
    return made


def _thread_start(self: threading.Thread) -> None:
    """A scheduled client's code starts a thread (a lease renewer, a heartbeat): it becomes a
    client of its own (`Scheduler._adopt`), scheduled one round trip at a time on the virtual
    clock. Thread.start waits (Event.wait) for the new thread to run: a real wait, not a virtual
    one, so the start takes no step."""
    client = current()
    if client is not None and not getattr(_flags, "real_waits", False):
        client.adopt(self)
    outer = getattr(_flags, "real_waits", False)
    _flags.real_waits = True
    try:
        _originals["thread_start"](self)
    finally:
        _flags.real_waits = outer


def _thread_join(self: threading.Thread, timeout: float | None = None) -> None:
    """A scheduled client joins a thread its code started: it waits on the virtual clock until
    that thread's client has run to its end (it needs steps to get there), then joins for real."""
    child = getattr(self, "_contend_client", None)
    if current() is None or child is None:
        return _originals["thread_join"](self, timeout)  # type: ignore[no-any-return]
    if _virtual_wait(lambda: child.ended, timeout):
        _originals["thread_join"](self)  # its run has returned: the thread is ending, without a step
    return None


def _event_wait(self: threading.Event, timeout: float | None = None) -> bool:
    if current() is None or getattr(_flags, "real_waits", False):
        return REAL_EVENT_WAIT(self, timeout)
    return _virtual_wait(self.is_set, timeout)


def _virtual_wait(done: Callable[[], bool], timeout: float | None) -> bool:
    """A scheduled client waits, on the virtual clock, until `done()` or `timeout` seconds (None:
    no limit); whether it was done. Polled as a blocking pop is: often at first, then less (a
    heartbeat waits a third of a lease between renewals: some tens of steps, not one every 10 ms)."""
    deadline = None if timeout is None else _monotonic() + max(0.0, float(timeout))
    pause = POLL_INTERVAL
    while not done():
        if deadline is not None and _monotonic() >= deadline:
            return False
        _sleep(pause if deadline is None else min(pause, max(0.0, deadline - _monotonic())))
        pause = min(pause * 2, MAX_POLL_INTERVAL)
    return True


# Virtual time -----------------------------------------------------------------
def _sleep(seconds: float) -> None:
    client = current()
    if client is None:
        REAL_SLEEP(seconds)
    else:
        client.sleep(max(0.0, float(seconds)))


def _monotonic() -> float:
    client = current()
    return REAL_MONOTONIC() if client is None else client.scheduler.monotonic()


def _perf_counter() -> float:
    client = current()
    return REAL_PERF_COUNTER() if client is None else client.scheduler.monotonic()


def _time() -> float:
    client = current()
    return REAL_TIME() if client is None else client.wall_time(read=not _for_a_log_record())


def _time_ns() -> int:
    client = current()
    return wall_clock.REAL_TIME_NS() if client is None else client.wall_time_ns(read=not _for_a_log_record())


def _for_a_log_record() -> bool:
    """Is the clock read by the logging module (a LogRecord's timestamp), not by the code? A
    library that logs a lost reply is no lock that reads its wall clock: were it counted, the
    clock-skew rules would be on in one run of an example and off in its replay."""
    return sys._getframe(2).f_globals.get("__name__") == "logging"
