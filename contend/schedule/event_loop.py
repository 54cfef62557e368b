"""A scheduled async client's event loop: virtual time, and real I/O that cannot reorder its tasks.

The loop's clock is the scheduler's virtual monotonic clock (`loop.time()`), so timeouts and
`call_later` run on virtual time. Real I/O still happens on it: connecting, and waiting for the
replies the server owes. When the client's code runs several tasks on its loop (a worker that
starts a job in a task of its own while its poll goes on), which task reaches its next round trip
first must not depend on how fast a socket answered in real time, or the same schedule behaves
differently from one run to the next (Hypothesis: FlakyStrategyDefinition). So, on this loop:

* a connect completes before the connecting task goes on (`sock_connect` blocks, bounded), and a
  host name is resolved in place (`getaddrinfo`), not in the default executor's threads;
* before each pass of the loop, every reply a task is waiting for (a read of redis-py's
  `read_response` that is not a pub/sub wait) has arrived: the loop waits for it in real time,
  bounded by `OWED_REPLY_SECONDS`, so that no virtual timeout fires before it and no other task
  runs in its place;
* sockets that are ready together are handled in the order they were registered, not in the
  order the kernel saw them ready.
"""

from __future__ import annotations

import asyncio
import itertools
import select
import selectors
import socket
import time
from collections.abc import Callable
from typing import Any

#: How long (real seconds) the loop waits for a reply it is owed, or a connect, before it goes on
#: as a plain loop would: a local server answers in milliseconds even on a busy machine, and a
#: server that is paused (a fault) must not hang the loop.
OWED_REPLY_SECONDS = 5.0


def _wait_readable(fds: list[int], seconds: float) -> None:
    """Block until each of `fds` is readable (data, or the peer closed), or `seconds` have passed."""
    deadline = time.monotonic() + seconds
    pending = set(fds)
    while pending:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        poller = select.poll()
        for fd in pending:
            poller.register(fd, select.POLLIN | select.POLLPRI)
        for fd, _ in poller.poll(left * 1000):
            pending.discard(fd)


class OwedRepliesSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """The loop's selector: it first waits for the replies `owed()` names, and gives the ready
    sockets in the order they were registered."""

    def __init__(self, owed: Callable[[], list[int]]) -> None:
        super().__init__()
        self._owed = owed
        self._order: dict[int, int] = {}
        self._count = itertools.count()

    def register(self, fileobj: Any, events: int, data: Any = None) -> selectors.SelectorKey:
        key = super().register(fileobj, events, data)
        self._order[key.fd] = next(self._count)
        return key  # type: ignore[no-any-return]

    def unregister(self, fileobj: Any) -> selectors.SelectorKey:
        key = super().unregister(fileobj)
        self._order.pop(key.fd, None)
        return key  # type: ignore[no-any-return]

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        owed = self._owed()
        if owed:
            _wait_readable(owed, OWED_REPLY_SECONDS)
        events = super().select(timeout)
        return sorted(events, key=lambda event: self._order.get(event[0].fd, -1))


class VirtualClockLoop(asyncio.SelectorEventLoop):
    """A client's event loop whose clock is the scheduler's virtual monotonic clock, and whose
    real I/O cannot change which of its tasks runs first (the module's docstring)."""

    def __init__(self, client: Any) -> None:
        #: redis.asyncio connections whose task is inside read_response for a reply the server owes.
        self.owed_reads: dict[int, Any] = {}
        super().__init__(OwedRepliesSelector(self._owed_fds))
        self._contend_client = client

    def time(self) -> float:
        return self._contend_client.scheduler.monotonic()  # type: ignore[no-any-return]

    def _owed_fds(self) -> list[int]:
        """The sockets of owed reads that are waiting for data now (none buffered yet)."""
        fds = []
        for conn in self.owed_reads.values():
            reader, writer = getattr(conn, "_reader", None), getattr(conn, "_writer", None)
            waiter = getattr(reader, "_waiter", None)
            if writer is None or waiter is None or waiter.done():
                continue
            sock = writer.get_extra_info("socket")
            if sock is not None and sock.fileno() >= 0:
                fds.append(sock.fileno())
        return fds

    async def sock_connect(self, sock: socket.socket, address: Any) -> None:
        """Connect before going on (real time, bounded), as a blocking connect does."""
        sock.settimeout(OWED_REPLY_SECONDS)
        try:
            sock.connect(address)
        finally:
            sock.setblocking(False)

    async def getaddrinfo(self, *args: Any, **kwargs: Any) -> Any:  # type: ignore[override]
        """Resolve in place (the default resolves in executor threads, in real time)."""
        return socket.getaddrinfo(*args, **kwargs)
