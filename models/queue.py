"""A work queue: items are put, taken by one consumer at a time, and done once acked.

Operations (`Op.process` is the acting client, `Op.key` the queue; queues are independent):

    f       process  value  output
    put     p        item   id: the job's id (UNKNOWN: the put may or may not have happened; such
                            a job is not required to come out, and ids are matched by item then).
    take    p        None   (id, item): p now holds that job; None: nothing was ready. Any ready
                            job may come out, except that a FIFO queue hands out jobs never taken
                            before in the order they were put (a job given back may come first).
    ack     p        id     "ok": p held the job and it is done; "refused": p did not hold it (an
                            ack of an id p does not hold may be refused or do nothing, as the
                            protocol allows: "ok" is legal too, and changes nothing).
    nack    p        id     "ok": p held the job and it is ready again; as ack for anything else.
    extend  p        id     "ok" when p holds the job (a lease is kept, the state does not change).
    lapse   None     None   None: a harness event; every lease ran out and redelivery time passed:
                            every held job is ready again (it has been taken before).

A job p holds is taken by nobody else until p acks or nacks it or a `lapse`. Ids are compared as
text (bytes and str alike), items as given (lists as tuples).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from contend.models.base import UNKNOWN, Op, freeze, partition_by_key

OK = "ok"
REFUSED = "refused"


@dataclass(frozen=True)
class Job:
    """A job: its id (None when the put's reply never came), its item, and whether it was taken before."""

    id: Hashable
    item: Hashable
    taken_before: bool = False


@dataclass(frozen=True)
class QueueState:
    """Jobs ready to be taken (oldest put first), and the jobs held, by holder."""

    ready: tuple[Job, ...] = ()
    held: frozenset[tuple[Hashable, Job]] = frozenset()
    #: Jobs whose put's outcome is unknown: they may be ready, or may never have been put.
    maybe: tuple[Job, ...] = ()


class QueueModel:
    """A work queue (see the module docstring); `fifo` orders first deliveries."""

    def __init__(self, fifo: bool = False) -> None:
        self.fifo = fifo
        self.name = "fifo-queue" if fifo else "queue"

    def __repr__(self) -> str:
        return f"QueueModel(fifo={self.fifo})"

    def init(self) -> QueueState:
        return QueueState()

    def step(self, state: QueueState, op: Op) -> tuple[bool, QueueState]:
        f, process = op.f, op.process
        if f == "lapse":
            back = tuple(Job(j.id, j.item, True) for _, j in sorted(state.held, key=repr))
            return True, QueueState(back + state.ready, frozenset(), state.maybe)
        if f not in ("put", "take", "ack", "nack", "extend"):
            raise ValueError(
                f"queue model has no operation {f!r}: expected put, take, ack, nack, extend, lapse"
            )
        if process is None:
            raise ValueError(f"queue {f} needs the acting client in Op.process, got None")
        if f == "put":
            job = Job(None if op.output is UNKNOWN else _id(op.output), freeze(op.value))
            if op.output is UNKNOWN:
                return True, QueueState(state.ready, state.held, (*state.maybe, job))
            return True, QueueState((*state.ready, job), state.held, state.maybe)
        if f == "take":
            return self._take(state, op)
        mine = [j for holder, j in state.held if holder == process and j.id == _id(op.value)]
        if not mine:  # not held by p: refused or harmless, and nothing changes
            return op.output in (UNKNOWN, OK, REFUSED), state
        legal = op.output in (UNKNOWN, OK)
        if f == "extend":
            return legal, state
        held = state.held - {(process, mine[0])}
        ready = state.ready if f == "ack" else (Job(mine[0].id, mine[0].item, True), *state.ready)
        return legal, QueueState(ready, held, state.maybe)

    def _take(self, state: QueueState, op: Op) -> tuple[bool, QueueState]:
        if op.output is UNKNOWN:
            return True, state  # not modelled: the harness keeps such takes out of sequential runs
        if op.output is None:
            return not state.ready, state
        job_id, item = _id(op.output[0]), freeze(op.output[1])
        found = self.takeable(state, job_id, item)
        if found is None:
            return False, state
        job, where = found
        held = state.held | {(op.process, Job(job_id, item, True))}
        if where == "ready":
            ready = tuple(j for j in state.ready if j is not job)
            return True, QueueState(ready, held, state.maybe)
        maybe = tuple(j for j in state.maybe if j is not job)
        return True, QueueState(state.ready, held, maybe)

    def takeable(self, state: QueueState, job_id: Hashable, item: Hashable) -> tuple[Job, str] | None:
        """The job a take returning (job_id, item) can have got, and from where ("ready" or
        "maybe"); None if no job can come out as that now."""
        for job in state.ready:
            if job.item == item and job.id in (job_id, None):
                if self.fifo and not job.taken_before:
                    first = next(j for j in state.ready if not j.taken_before)
                    if first is not job:
                        continue
                return job, "ready"
        for job in state.maybe:
            if job.item == item:
                return job, "maybe"
        return None

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return partition_by_key(ops)

    def describe_state(self, state: QueueState) -> str:
        ready = ", ".join(f"{j.id}:{j.item!r}" for j in state.ready) or "nothing"
        held = ", ".join(f"{p} holds {j.id}:{j.item!r}" for p, j in sorted(state.held, key=repr)) or "nobody"
        return f"ready: {ready}; {held}"


def _id(value: Any) -> Hashable:
    """An id as text, so b'1-0' and '1-0' are one id."""
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    return str(value)


def ready_items(state: QueueState) -> list[Hashable]:
    """The items ready to be taken, oldest first."""
    return [j.item for j in state.ready]
