"""Cancellation in the lock and registry machines, for async implementations (issue #3847's
kind of bug, and a registration cancelled half-way).

`CANCEL_RULES` are added to the LockMachine of an async lock or semaphore (and only
there: a synchronous machine's rules, and so its explored examples, stay as they were).
They cancel a client's task where Hypothesis chooses: before a round trip's command is
sent, while its reply is awaited, or while the operation sleeps between round trips.
Then, as a running program would, the client's loop finishes its background tasks (a
shielded delete goes on), and:

* after a cancelled extend() or release(), the client calls release() (what `async with`
  or a `finally` does). If no other client holds the lock, one must get it at once: a
  lease left behind is one nobody can free but its TTL;
* after a cancelled acquire(), the client may or may not hold a lease it does not know
  of, as after a crash, but lives on: that lease must end with its TTL (crash liveness,
  judged at the end), and whatever the cancelled acquire did on its way out must leave the
  others' exclusion intact (judged at every step).
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.impl.catalog import CRASH_LIVENESS, MUTUAL_EXCLUSION
from contend.schedule.async_gate import drain
from contend.schedule.client import Status
from contend.schedule.gating import CancelAt

#: An acquire drawn for cancellation is cancelled one time in ONE_IN: acquires are in flight most
#: of the time, and cancelling them at every chance would crowd out everything else.
ONE_IN = 6
#: Round trips a cancelled operation may still make on its way out before the schedule takes over.
FINISH_STEPS = 50


def _in(machine: Any, *operations: str) -> list[int]:
    """Workers in the middle of one of `operations`, at a round trip or asleep: cancellable there.
    Not while a thread its code started runs: the task is then blocked in the thread's join, a
    synchronous call no cancellation can interrupt (redis-py's async cluster pipeline runs each
    command of a transaction so)."""
    clients = machine.scheduler.clients
    return [
        i
        for i, label in machine.in_flight.items()
        if label.startswith(operations)
        and i != machine.probe
        and clients[i].status in (Status.READY, Status.SLEEPING)
        and not _thread_running(clients[i])
    ]


def _thread_running(client: Any) -> bool:
    """Is a thread `client`'s code started (at any depth) still running?"""
    return any(not child.ended or _thread_running(child) for child in client.children)


def _cancel(
    machine: Any, candidates: list[int], which: int, while_awaiting_reply: bool
) -> tuple[int, CancelAt]:
    """Cancel one of `candidates` at its next await (asleep, or before or after its send); the
    client and where the cancellation landed."""
    index = candidates[which % len(candidates)]
    client = machine.scheduler.clients[index]
    if client.status is Status.SLEEPING:
        where = CancelAt.SLEEPING
    else:
        where = CancelAt.AFTER_SEND if while_awaiting_reply else CancelAt.BEFORE_SEND
    _forget_plans(machine, index)
    machine.before_step(index)
    machine.scheduler.cancel(index, where)
    machine._after_progress(index)
    return index, where


def _forget_plans(machine: Any, index: int) -> None:
    """What was planned for this client's operation (a crash, a stall) was for the one cancelled."""
    machine.crash_plan.pop(index, None)
    machine.stall_inside.pop(index, None)
    machine.stalls.discard(index)
    machine.extends.discard(index)


@precondition(lambda self: bool(_in(self, "acquire")))
@rule(
    which=st.integers(0, 3),
    while_awaiting_reply=st.booleans(),
    now=st.sampled_from([False] * (ONE_IN - 1) + [True]),
)
def cancel_acquire(self: Any, which: int, while_awaiting_reply: bool, now: bool) -> None:
    """Cancel an acquiring client's task at its next await; its loop runs on. It may hold a lease
    it does not know of, as a crashed client may: the lease must end with its TTL. Whatever it
    did on its way out (an undo) must leave the holders' leases alone."""
    if not now:
        return  # acquires are in flight most of the time: one drawn in ONE_IN is cancelled
    index, where = _cancel(self, _in(self, "acquire"), which, while_awaiting_reply)
    self.step_alone(index, FINISH_STEPS)  # what it still sends on its way out (UNWATCH, an undo)
    if index in self.in_flight:
        return  # the code caught the cancellation and carried on: its next steps come as any others
    if index in self.believers:
        # The acquire returned a grant in spite of the cancellation: the client holds the lock as
        # after any acquire (completed() has started its release).
        return
    self.run_alone(index, drain, "the loop finishes its background tasks")
    if _sent_since_start(self, index, "acquire") and not _surely_free(self, index):
        self.crashed(index)  # a lease nobody knows of, or none: its TTL must free the lock
    held = sorted(self.valid_holders() - {index})
    if MUTUAL_EXCLUSION not in self.claims or len(held) < self.limit or self.skews:
        return  # a free slot: the probe would say nothing (and skewed leases are the skew rule's)
    if self.probe_acquires():
        names = ", ".join(self.scheduler.clients[h].name for h in held)
        self.fail(
            MUTUAL_EXCLUSION,
            f"{self.scheduler.clients[index].name}'s acquire() was cancelled {where.value}; what it did on "
            f"its way out freed the lease {names} hold(s): a third client acquired at once "
            f"(limit {self.limit}, virtual time {self.scheduler.vclock:.3f} s)",
        )


@precondition(lambda self: bool(_in(self, "release()", "extend(")))
@rule(which=st.integers(0, 3), while_awaiting_reply=st.booleans())
def cancel_release(self: Any, which: int, while_awaiting_reply: bool) -> None:
    """Cancel a holder's release() or extend() task at its next await; its loop runs on, it
    releases (again), and then a lock nobody else holds must be free."""
    label = {i: self.in_flight[i] for i in _in(self, "release()", "extend(")}
    index, where = _cancel(self, list(label), which, while_awaiting_reply)
    client = self.scheduler.clients[index]
    was = label[index]
    lost = index in self.lost_reply_in  # a reply lost in this operation: what it left is indeterminate
    # What it still sends on its way out (a pipeline's UNWATCH), and after a cancelled extend the
    # release that follows (as `async with` does), run alone to their end.
    self.step_alone(index, FINISH_STEPS)
    if index in self.in_flight:
        return  # the code caught the cancellation and carried on: its next steps come as any others
    self.run_alone(index, drain, "the loop finishes its background tasks")
    if was == "release()":
        self.run_alone(index, self.locks[index].release, "release() again")
    if CRASH_LIVENESS not in self.claims or not self.server_keeps_time:
        return
    if lost or index in self.lost_reply_in:
        return  # a lease a lost reply left behind may stand until its TTL (crash-liveness allows it)
    if not _probe_can_tell(self, index):
        return
    if not self.probe_acquires():
        self.fail(
            CRASH_LIVENESS,
            f"{client.name}'s {was} was cancelled {where.value}; its loop ran on and it called "
            f"release() {'again' if was == 'release()' else 'on its way out'}, yet the lock nobody holds cannot be taken: the lease is orphaned "
            f"until its TTL runs out (left behind under {self.key})",
        )


def _probe_can_tell(machine: Any, index: int) -> bool:
    """Would a probe's acquire say something about client `index`'s lease: nobody else holds or
    may hold one, and no other acquire (which may hold the key already) is under way?"""
    others = (machine.believers | machine.crashed_holders) - {index}
    if any(machine.may_hold(o) for o in others):
        return False
    return not any(label.startswith("acquire") for i, label in machine.in_flight.items() if i != index)


def _surely_free(machine: Any, index: int) -> bool:
    """Can a probe take the lock at once, with nobody else in the way (so the cancelled acquire
    left no lease)? False when that cannot be told."""
    return _probe_can_tell(machine, index) and bool(machine.probe_acquires())


def _sent_since_start(machine: Any, index: int, operation: str) -> bool:
    """Has client `index` sent anything since its last `operation` started (the cancelled
    operation, what it sent on its way out, and its loop's background tasks)?"""
    name = machine.scheduler.clients[index].name
    for step in reversed(machine.scheduler.trace):
        if step.client != name:
            continue
        if step.sent:
            return True
        if step.note.startswith(f"starts {operation}"):
            return False
    return False


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
        self.run_alone(index, drain, "the loop finishes its background tasks")


#: The rules an async lock machine has on top of the LockMachine's.
CANCEL_RULES: dict[str, Any] = {"cancel_acquire": cancel_acquire, "cancel_release": cancel_release}
#: The rules an async registry machine has on top of the RegistryMachine's.
REGISTRY_CANCEL_RULES: dict[str, Any] = {"cancel_register": cancel_register}
