"""A scheduled async client's loop: how fast a socket answers in real time never decides which of
the client's own tasks goes first (contend.schedule.event_loop)."""

from __future__ import annotations

import asyncio
import threading
import time

import redis.asyncio

from contend.schedule import Scheduler
from contend.servers.server import EmbeddedRedis

#: How late (real seconds) the paused server's reply comes: far longer than a few loop passes.
LATE = 0.2


def late_reply_then_yields(server: EmbeddedRedis, connected: bool) -> list[str]:
    """One client runs two tasks of its own: one awaits a reply the server sends LATE seconds late
    (paused, then resumed by a thread started outside the scheduler, which runs in real time), the
    other yields to the loop 50 times (a connect and its handshake take far fewer passes). Which finished first, run through the scheduler."""
    paused = threading.Event()

    def resume_later() -> None:
        if paused.wait(30):
            time.sleep(LATE)
        server.resume()

    resumer = threading.Thread(target=resume_later)
    resumer.start()

    conn = redis.asyncio.Redis(host=server.host, port=server.port)

    async def both() -> list[str]:
        order: list[str] = []
        if connected:
            await conn.ping()  # only the reply will be late, not the connection's handshake

        async def awaits_reply() -> None:
            server.pause()
            paused.set()
            await conn.ping()
            order.append("reply")

        async def yields() -> None:
            for _ in range(50):
                await asyncio.sleep(0)
            order.append("yields")

        await asyncio.gather(awaits_reply(), yields())
        return order

    try:
        with Scheduler() as s:
            s.add_client(connection=conn)
            s.start(0, both, "two tasks")
            s.run_all(lambda current, ready: ready[0])
            outcome = s.clients[0].outcome
            assert outcome.error is None, outcome.error
            return outcome.value  # type: ignore[no-any-return]
    finally:
        paused.set()
        resumer.join()


def test_a_task_waiting_for_its_reply_is_not_overtaken_because_the_reply_is_slow():
    with EmbeddedRedis() as server:
        assert late_reply_then_yields(server, connected=True) == ["reply", "yields"]


def test_a_fresh_connections_handshake_is_waited_for_as_well():
    with EmbeddedRedis() as server:
        assert late_reply_then_yields(server, connected=False) == ["reply", "yields"]
