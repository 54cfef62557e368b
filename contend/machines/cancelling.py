"""Cancellation in the lock and registry machines, for async implementations (issue #3847's
kind of bug, and a registration cancelled half-way).

`CANCEL_RULES` are added to the LockMachine of an async lock or semaphore (and only
there: a synchronous machine's rules, and so its explored examples, stay as they were).
The rule cancels a client's release() task where Hypothesis chooses: before a round
trip's command is sent, while its reply is awaited, or while the release sleeps. Then,
as a running program would, the client's loop finishes its background tasks (a shielded
delete goes on) and the client calls release() again. If no other client holds the lock,
one must get it at once: a lease left behind is one nobody can free but its TTL.
"""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.impl.catalog import CRASH_LIVENESS
from contend.schedule.async_gate import CancelAt
from contend.schedule.scheduler import Status


def _releasing(machine: Any) -> list[int]:
    """Workers in the middle of a release(), at a round trip or asleep: cancellable there."""
    return [
        i
        for i, label in machine.in_flight.items()
        if label == "release()"
        and i != machine.probe
        and machine.scheduler.clients[i].status in (Status.READY, Status.SLEEPING)
    ]


@precondition(lambda self: bool(_releasing(self)))
@rule(which=st.integers(0, 3), while_awaiting_reply=st.booleans())
def cancel_release(self: Any, which: int, while_awaiting_reply: bool) -> None:
    """Cancel a releasing client's task at its next await; its loop runs on, it releases again,
    and then a lock nobody else holds must be free."""
    candidates = _releasing(self)
    index = candidates[which % len(candidates)]
    client = self.scheduler.clients[index]
    if client.status is Status.SLEEPING:
        where = CancelAt.SLEEPING
    else:
        where = CancelAt.AFTER_SEND if while_awaiting_reply else CancelAt.BEFORE_SEND
    self.before_step(index)
    self.scheduler.cancel(index, where)
    self._after_progress(index)
    if index in self.in_flight:
        return  # the code caught the cancellation and carried on: its next steps come as any others
    lock = self.locks[index]
    # What was planned for this client's operation (a crash, a stall) was for the one cancelled.
    self.crash_plan.pop(index, None)
    self.stall_inside.pop(index, None)
    self.stalls.discard(index)
    self.run_alone(index, _drain, "the loop finishes its background tasks")
    self.run_alone(index, lock.release, "release() again")
    if CRASH_LIVENESS not in self.claims or self.reads_server_clock:
        return
    if (self.believers | self.crashed_holders) - {index}:
        return  # another client holds (or may hold) a lease: the probe would say nothing
    if any(label.startswith("acquire") for i, label in self.in_flight.items() if i != index):
        return  # another acquire may hold the key already: the probe would say nothing
    if not self.probe_acquires():
        self.fail(
            CRASH_LIVENESS,
            f"{client.name}'s release() was cancelled {where.value}; its loop ran on and it called "
            f"release() again, yet the lock nobody holds cannot be taken: the lease is orphaned "
            f"until its TTL runs out (left behind under {self.key})",
        )


async def _drain() -> None:
    """Let the client's loop finish the tasks still pending on it, as a running loop would."""
    me = asyncio.current_task()
    pending = [t for t in asyncio.all_tasks() if t is not me and not t.done()]
    if pending:
        await asyncio.wait(pending, timeout=30)


def _registering(machine: Any) -> list[int]:
    """Clients in the middle of a register(), at a round trip or asleep."""
    return [
        i
        for i, label in machine.in_flight.items()
        if label.startswith("register(")
        and machine.scheduler.clients[i].status in (Status.READY, Status.SLEEPING)
    ]


@precondition(lambda self: bool(_registering(self)))
@rule(which=st.integers(0, 3), while_awaiting_reply=st.booleans())
def cancel_register(self: Any, which: int, while_awaiting_reply: bool) -> None:
    """Cancel a registering client's task at its next await. Its registration may or may not have
    taken effect, as after a crash, but the client lives on; what it left behind must still be ids
    1..n with tables that agree (checked when nothing is in flight)."""
    candidates = _registering(self)
    index = candidates[which % len(candidates)]
    client = self.scheduler.clients[index]
    if client.status is Status.SLEEPING:
        where = CancelAt.SLEEPING
    else:
        where = CancelAt.AFTER_SEND if while_awaiting_reply else CancelAt.BEFORE_SEND
    self.before_step(index)
    self.scheduler.cancel(index, where)
    self._after_progress(index)
    if index not in self.in_flight:
        self.run_alone(index, _drain, "the loop finishes its background tasks")


#: The rules an async lock machine has on top of the LockMachine's.
CANCEL_RULES: dict[str, Any] = {"cancel_release": cancel_release}
#: The rules an async registry machine has on top of the RegistryMachine's.
REGISTRY_CANCEL_RULES: dict[str, Any] = {"cancel_register": cancel_register}
