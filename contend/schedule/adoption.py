"""Threads the code under test starts: each becomes a client of its own, scheduled one round trip
at a time like any client (contend.schedule.gate sees Thread.start)."""

from __future__ import annotations

import threading

from contend.schedule.client import ClientCrashed, ClientHandle, Controller, OperationResult, Status
from contend.schedule.gating import bind
from contend.schedule.trace import TraceEntry


def adopt(scheduler: Controller, parent: ClientHandle, thread: threading.Thread) -> None:
    """Client thread (`parent`'s, holding the baton): its code starts `thread`, which becomes a
    client of its own. It runs only when scheduled, one round trip at a time like any client,
    its sleeps and waits on the virtual clock (a leader's heartbeat renews its lease on the
    same clock as everything else); its first step runs its code up to its first round trip.
    It shares its parent's wall clock, and dies with it."""
    child = ClientHandle(
        scheduler, len(scheduler.clients), f"{parent.name}.t{len(parent.children) + 1}", own_thread=False
    )
    child.parent = parent
    child.skew = parent.skew
    child.operation = f"thread {thread.name}"
    child.status = Status.READY
    parent.children.append(child)
    scheduler.clients.append(child)
    scheduler.trace.append(
        TraceEntry(
            len(scheduler.trace),
            child.name,
            [],
            vtime=scheduler.vclock,
            note=f"a thread {parent.name}'s code started",
        )
    )
    body = thread.run

    def run() -> None:
        bind(child)
        scheduler._wait_for_turn(child)
        try:
            if child.status is Status.CRASHED:
                raise ClientCrashed(child.name)
            body()
            outcome = OperationResult(done=True)
        except ClientCrashed:
            outcome = OperationResult(done=False)
        except BaseException as exc:
            outcome = OperationResult(error=exc, done=True)
        scheduler._finish(child, outcome)
        bind(None)

    thread.run = run  # type: ignore[method-assign]
    thread._contend_client = child  # type: ignore[attr-defined]  # Thread.join waits for it (gate)


def descendants(client: ClientHandle) -> list[ClientHandle]:
    """The threads `client`'s code started, and theirs."""
    found = []
    for child in client.children:
        found += [child, *descendants(child)]
    return found
