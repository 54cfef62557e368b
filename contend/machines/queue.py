"""The queue machine: producers put, consumers take, work and ack, while Hypothesis interleaves them.

Every worker client both puts and takes. A take that gets a job is followed by the consumer's
work (a virtual sleep of a share of the lease) and then its ack, nack (if the queue has one), an
extend then an ack (if it has extend), or its death with the job in hand. Besides `advance`
(whose round trips may lose their replies), Hypothesis may crash a worker in the middle of any
operation, start a crashed worker again as a new process (a new connection and queue object),
let time pass (a share of the lease) or stall every client past the lease.

A lease is *valid* from the take's start (or the put's, if later: the job cannot be handed out
before it was put) until the queue's `lease_ms` has passed on the virtual clock; an extend of a
valid lease that returns success moves its end to the extend's start plus its ms. The holder lets
go when its ack or nack starts; a consumer that crashed holds on until the lease runs out. The
server keeps the virtual clock, so leases and idle times there lapse exactly when the schedule
says. Properties, judged when a take returns and at the end:

* no-phantom: a take returns an item that some put began before it returned;
* no-double-delivery: no take returns an item while more consumers than there are copies of it
  hold valid leases on it (items are unique unless Hypothesis queued a value twice);
* ack-final: no take returns an item whose every copy was acked by a holder whose lease was valid
  when its ack returned (before the take began);
* fifo (if claimed): a take that delivers an item for the first time does not overtake an item
  whose put returned before this one's began and that no take has delivered (takes whose outcome
  is unknown may have delivered it);
* no-loss (at the end): every operation is run to its end, twice the lease passes after the last
  take or extend returned, and a fresh consumer drains the queue (taking and acking, trying again
  for another lease once it is empty): every copy put and not acked must come out. A queue that
  declares no lease (`lease_ms` None) never delivers a job twice, so a job its consumer took and
  died with, or whose take lost its reply, is lost.

An ack that raised or returned False (or 0) was refused; one whose reply was lost, or that
returned after the lease ran out, may or may not have acked: its job is then neither required
back nor forbidden to come back. A refusal is no failure in itself, a valid holder's included
(docs/protocol.md: any ack may be refused, and a valid holder's refused ack leaves the job to be
delivered again): its job counts as not acked, so no-loss requires it back, and a queue that
refuses the ack yet drops the job fails no-loss.

The operations are plain functions for synchronous and redis.asyncio queues alike: what one returns
(an async queue's coroutine) its client runs to the end on its own loop, and the virtual sleeps
before it are the sync gate's (contend.schedule.client); an async queue's clients are
redis.asyncio ones (`asynchronous`, set by contend.machines.family).
"""

from __future__ import annotations

import inspect
import time
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.impl.catalog import ACK_FINAL, FIFO, NO_DOUBLE_DELIVERY, NO_LOSS, NO_PHANTOM
from contend.machines.connections import async_connection, take_connection
from contend.machines.queue_deliveries import Delivery, DeliveryBook, Put, as_compared, refused
from contend.schedule.client import Status
from contend.servers.target import Target
from contend.subject.protocols import declared_lease

#: The lease the machine asks of a factory that takes `lease_ms` (virtual: it costs no real time).
LEASE_MS = 10_000
#: How long a take may wait, in virtual seconds.
TAKE_TIMEOUTS = (0.0, 0.0, 0.05, 1.0)
#: How long a consumer works on a job before it acks, as shares of the lease (past 1: it overruns).
WORK = (0.0, 0.3, 0.6, 1.5)
#: What a consumer does once its work is done.
THEN = ("ack", "ack", "ack", "nack", "extend", "die")
#: Shares of the lease a consumer goes on taking for until it gets a job (0: one take); the
#: loop twice as often as one take: a consumer that polls while another holds a job is where
#: reapers and claimers race.
PATIENCE = (0.0, 0.8, 0.8)
#: Shares of the lease a pause lets pass; a stall is longer than the lease.
PAUSES = (0.3, 0.6, 0.9)
STALL = 1.2
#: In examples that stall (half of them, drawn at the first advance), one advance in this many
#: ends with a stall. A stall lets every lease lapse, those of takes under way too, and with them
#: the evidence of a double delivery; the other half never stalls.
STALL_ONE_IN = 6
#: While workers are idle and the busy ones sleep, time passes this share of the lease at a time.
IDLE_STEP = 0.3
#: Restarts of crashed workers an example may make.
MAX_RESTARTS = 2


class QueueMachine(DeliveryBook):
    """Subclass per implementation with `factory` and `claims` set. Clients 0..workers-1 are the
    ones Hypothesis drives (restarted workers are added after them); client `probe` drains at the
    end."""

    factory: Any = None
    workers = 3
    clients = 4
    crash_rule = False  # workers crash through `crash_worker` and `take(then="die")`
    essential_rules = frozenset({"put", "take", "advance"})
    anchor = ("queue",)
    judged_on_kept_time = "leases running out (stalls, pauses, redelivery after a crash: no-loss)"
    situations: ClassVar[dict[str, str]] = {
        NO_DOUBLE_DELIVERY: "a take that returned a job while another consumer held a valid lease",
        ACK_FINAL: "a take that began after an ack had returned",
        FIFO: "a take that began while two or more items put were still undelivered",
        NO_LOSS: "a consumer that died, or lost a reply, with a job taken or being taken, or whose lease ran out before its ack",
    }

    def __init__(self, target: Target, **kwargs: Any) -> None:
        self.queues: dict[int, Any] = {}
        self.worker_ids: list[int] = []
        self.plans: dict[int, tuple[float, str]] = {}  # client -> (work, then) for its next job
        self.restarts = 0
        self.lease = LEASE_MS / 1000
        self.new_holder: int | None = None
        self.last_trip: dict[str, int] = {}  # client name -> the trace index of its last round trip
        self.seen = 0
        self.op_began: dict[int, int] = {}  # client -> the trace's length when its operation began
        self.lossy: bool | None = None  # may replies be lost in this example (drawn at its first advance)
        self.repeats: bool | None = None  # may a put repeat an earlier item (drawn there too)
        self.stalls = False  # may every client stall past the lease (drawn there too)
        #: client -> (timeout, until): a consumer's loop takes again, a tenth of the lease apart,
        #: until it gets a job or the virtual clock reaches `until`; None: one take.
        self.patience: dict[int, tuple[float, float] | None] = {}
        super().__init__(target, **kwargs)

    # Set-up ------------------------------------------------------------------------------
    def setup_clients(self) -> None:
        self.name = self.ns.key(*self.anchor)
        self.probe = self.clients - 1
        for index in range(self.clients):
            self.queues[index] = self.new_queue(self.connections[index])
        self.worker_ids = list(range(self.workers))
        declared = declared_lease(self.queues[0], type(self).factory)
        self.lease = None if declared is None else declared / 1000
        lease = self.lease or LEASE_MS / 1000
        self.operation_bound = lease * (max(WORK) + max(PATIENCE) + 2) + max(TAKE_TIMEOUTS) + 1

    def new_queue(self, conn: Any) -> Any:
        """One client's queue object; the factory is asked for LEASE_MS if it takes `lease_ms`."""
        factory = type(self).factory
        try:
            params = inspect.signature(factory).parameters.values()
            takes = any(p.name == "lease_ms" or p.kind is p.VAR_KEYWORD for p in params)
        except (TypeError, ValueError):
            takes = False
        if takes:
            try:
                return factory(conn, self.name, lease_ms=LEASE_MS)
            except TypeError:
                pass
        return factory(conn, self.name)

    def idle_workers(self) -> list[int]:
        return [i for i in self.worker_ids if self.scheduler.clients[i].status is Status.IDLE]

    def living_workers(self) -> list[int]:
        return [i for i in self.worker_ids if self.scheduler.clients[i].status is not Status.CRASHED]

    # Rules -------------------------------------------------------------------------------
    @precondition(lambda self: bool(self.idle_workers()))
    @rule(client=st.integers(0, 3), again=st.sampled_from([False, True]))
    def put(self, client: int, again: bool) -> None:
        """A worker puts a new item, or (`again`, in examples whose items may repeat) the value of
        an earlier one a second time."""
        idle = self.idle_workers()
        index = idle[client % len(idle)]
        earlier = [p.item for p in self.puts]
        again = again and self.repeats is not False
        item = earlier[-1] if again and earlier else f"job-{len(self.puts) + 1}"
        record = Put(len(self.puts) + 1, self.scheduler.clients[index].name, item, self.scheduler.vclock)
        self.puts.append(record)
        self.running[index] = ("put", record)
        queue = self.queues[index]
        self.start(index, lambda: queue.put(item), f"put({item!r})")

    @precondition(lambda self: len(self.idle_workers()) > (0 if self.puts else 1))
    @rule(
        client=st.integers(0, 3),
        timeout=st.sampled_from(TAKE_TIMEOUTS),
        work=st.sampled_from(WORK),
        then=st.sampled_from(THEN),
        patience=st.sampled_from(PATIENCE),
    )
    def take(self, client: int, timeout: float, work: float, then: str, patience: float) -> None:
        """A worker takes a job (before any put, not the last idle worker: every take could then
        only wait, and no worker would be left to put); with `patience`, it calls take again (a consumer's loop, a tenth
        of the lease apart) until it gets one or that share of the lease has passed. With a job,
        it works on it for `work` leases, then acks, nacks, extends and acks, or dies holding it
        (`then`)."""
        idle = self.idle_workers()
        index = idle[client % len(idle)]
        self.plans[index] = (work, then)
        lease = self.lease or LEASE_MS / 1000
        self.patience[index] = (timeout, self.scheduler.vclock + patience * lease) if patience else None
        self.take_once(index, timeout)

    def take_once(self, index: int, timeout: float, pause: float = 0.0) -> None:
        """One take by client `index`, after a (virtual) `pause`. The operation is a plain function
        for sync and async code alike: what it returns (an async queue's coroutine) the client runs
        to its end on its own loop (contend.schedule.client)."""
        queue = self.queues[index]
        self.running[index] = ("take", self.scheduler.vclock)

        def once() -> Any:
            if pause:
                time.sleep(pause)
            self.running[index] = ("take", self.scheduler.vclock)  # the take's own start
            return queue.take(timeout)

        label = f"take({timeout:g})" if not pause else f"wait {pause:g} s, take({timeout:g}) again"
        self.start(index, once, label)

    @precondition(lambda self: self.some_client_runs())
    @rule(
        data=st.data(), steps=st.integers(1, 4), stall=st.sampled_from([False] * (STALL_ONE_IN - 1) + [True])
    )
    def advance(self, data: st.DataObject, steps: int, stall: bool) -> None:
        """Round trips as the base machine makes them; then, with `stall`, every client pauses
        past the lease, wherever it is in its operation. The first advance of an example draws
        whether its replies may be lost at all (as swarm testing turns rules off): a lost take
        reply is how a queue with no processing list loses a job, and it also leaves a race's
        take of unknown outcome, which proves no double delivery; examples of each kind find
        their own defects. It draws likewise whether puts may repeat an earlier item from then
        on: two copies of an item are what an ack by value gets wrong, and they also make a
        double delivery of one copy indistinguishable from one delivery of each. And whether
        clients may stall: a stall ends every lease, a take's under way too."""
        if self.lossy is None:
            self.lossy = self.lose_replies and data.draw(st.booleans(), label="replies may be lost")
            self.lose_replies = self.lossy
            self.repeats = data.draw(st.booleans(), label="items may be put twice")
            self.stalls = data.draw(st.booleans(), label="clients may stall")
        if self.idle_sleep_step():
            return
        super().advance(data, steps)
        if (
            stall
            and self.stalls
            and self.server_keeps_time
            and self.lease is not None
            and self.busy_workers()
        ):
            seconds = self.lease * STALL
            self.scheduler.advance(seconds, note=f"{seconds:g} s pass (a stall past the lease)")

    @precondition(lambda self: self.server_keeps_time and self.lease is not None and self.holding())
    @rule(share=st.sampled_from(PAUSES))
    def pause(self, share: float) -> None:
        """A share of the lease passes while the workers are where they are (a consumer working on
        its job stays asleep, and the others may start takes meanwhile)."""
        assert self.lease is not None
        seconds = self.lease * share
        self.scheduler.advance(seconds, note=f"{seconds:g} s pass")

    @precondition(lambda self: len(self.living_workers()) > 1 and bool(self.under_way()))
    @rule(data=st.data(), dies=st.sampled_from([False, False, True]))
    def crash_worker(self, data: st.DataObject, dies: bool) -> None:
        """A worker dies in the middle of its operation (a put, a take, its work or its ack), once
        it has made a round trip of it (one in three draws: a crash leaves fewer to race)."""
        if dies:
            index = data.draw(st.sampled_from(self.under_way()), label="crashed worker")
            self.kill(index)

    def under_way(self) -> list[int]:
        """Busy workers whose operation has made a round trip."""
        names = {self.scheduler.clients[i].name: i for i in self.busy_workers()}
        began = {i: self.op_began.get(i, 0) for i in names.values()}
        return sorted(
            {
                names[s.client]
                for s in self.scheduler.trace[min(began.values(), default=0) :]
                if s.sent and s.client in names and s.index >= began[names[s.client]]
            }
        )

    @precondition(lambda self: self.restarts < MAX_RESTARTS and len(self.living_workers()) < self.workers)
    @rule()
    def restart(self) -> None:
        """A crashed worker's process is started again: a new connection and queue object."""
        dead = next(i for i in self.worker_ids if i not in self.living_workers())
        conn = async_connection(self.target) if self.asynchronous else take_connection(self.target)
        self.connections.append(conn)
        index = self.scheduler.add_client(connection=conn)
        self.queues[index] = self.new_queue(conn)
        self.worker_ids[self.worker_ids.index(dead)] = index
        self.restarts += 1
        self.scheduler.note(
            f"{self.scheduler.clients[index].name} starts in place of {self.scheduler.clients[dead].name}"
        )

    def some_client_runs(self) -> bool:
        """Is a client ready, or asleep (so that time may pass until it wakes)? Unlike the
        scheduler's runnable(), asking does not move the clock."""
        return any(c.status in (Status.READY, Status.SLEEPING) for c in self.scheduler.clients)

    def idle_sleep_step(self) -> bool:
        """When every busy client sleeps (a consumer at work) and a worker is idle, time passes
        IDLE_STEP of the lease at most, not at once to the next wake-up: the idle worker may act
        in between (a consumer polling while another works on its job, where claimers and
        reapers race). The same as a `pause`; True when it stepped so."""
        if not self.server_keeps_time or self.lease is None or not self.idle_workers():
            return False
        live = [c for c in self.scheduler.clients if c.status in (Status.READY, Status.SLEEPING)]
        now = self.scheduler.vclock
        if not live or any(c.status is Status.READY or c.wake_at <= now + 1e-9 for c in live):
            return False
        gap = min(c.wake_at for c in live) - now
        step = self.lease * IDLE_STEP
        if gap <= step:
            return False
        self.scheduler.advance(step, note=f"{step:g} s pass")
        return True

    def advance_all(self, max_steps: int = 200) -> None:
        """Run every operation under way to its end, the lowest client first (for tests that force
        a schedule by hand)."""
        for _ in range(max_steps):
            ready = self.scheduler.runnable()
            if not ready:
                return
            self.current = ready[0]
            self.before_step(self.current)
            self.scheduler.step(self.current)
            self._after_progress(self.current)

    def first_choice(self, ready: list[int]) -> int | None:
        """The schedule's first choice (what Hypothesis draws most often, and shrinks to): a
        consumer that just got a job goes last, as the others run while it works; takes under way
        take turns, the one that has waited longest first (two takes read the same head before
        either moves it); otherwise the current client goes on. Any order stays possible."""
        held, self.new_holder = self.new_holder, None
        for step in self.scheduler.trace[self.seen :]:
            if step.sent:
                self.last_trip[step.client] = step.index
        self.seen = len(self.scheduler.trace)
        names = self.scheduler.clients
        taking = [i for i in ready if self.running.get(i, ("",))[0] == "take" and i != held]
        if len(taking) > 1:
            return min(taking, key=lambda i: self.last_trip.get(names[i].name, -1))
        if held is not None and self.current == held:
            return next((i for i in ready if i != held), held)
        return self.current

    def holding(self) -> bool:
        """Is a job held, by a worker at work or one that died with it, inside its lease?"""
        now = self.scheduler.vclock
        return any(d.let_go is None and d.valid_until > now for d in self.deliveries)

    def busy_workers(self) -> list[int]:
        return [i for i in self.busy_clients() if i in self.worker_ids]

    def start(self, index: int, operation: Any, label: str) -> None:
        self.op_began[index] = len(self.scheduler.trace)
        super().start(index, operation, label)

    # Bookkeeping --------------------------------------------------------------------------
    def kill(self, index: int) -> None:
        self.scheduler.crash(index)
        self.in_flight.pop(index, None)
        self.op_started.pop(index, None)
        self.op_waited.pop(index, None)
        self.crashed(index)

    def crashed(self, index: int) -> None:
        what, record = self.running.pop(index, ("", None))
        if what == "put":
            record.status, record.ended = "maybe", self.scheduler.vclock
        elif what == "take":
            self.maybe_takes.append(record)
            self.met[NO_LOSS] += 1
        elif what in ("ack", "nack", "extend"):
            self.met[NO_LOSS] += 1
            d = record[0] if what == "extend" else record
            if what == "ack" and d.let_go is not None:
                d.acked = "maybe"
            d.fate.append(f"{self.scheduler.clients[index].name} crashed ({what})")
        # A consumer that dies while working, or before its ack began, holds on until its lease ends.

    def completed(self, index: int) -> None:
        what, record = self.running.pop(index, ("", None))
        outcome = self.scheduler.clients[index].outcome
        now = self.scheduler.vclock
        if what == "put":
            record.ended = now
            if outcome.error is not None:
                record.status = "maybe"
            else:
                resent = index in self.lost_reply_in
                record.status, record.job = ("uncertain" if resent else "ok"), as_compared(outcome.value)
        elif what == "take":
            self.took(index, record, outcome)
        elif what == "ack":
            if record.let_go is None:  # it never reached its ack (an error while working)
                return
            record.ack_returned = now
            if self.indeterminate(index):
                record.acked = "maybe"
            elif refused(outcome):
                record.acked = "refused"
            else:
                record.acked = "yes" if now <= record.valid_until else "maybe"
            if now > record.valid_until or self.indeterminate(index):
                self.met[NO_LOSS] += 1
            record.fate.append(f"ack at {record.let_go:.3f} s: {record.acked or 'done'}")
        elif what == "extend":
            self.extended(index, record, outcome)
        elif what == "nack":
            record.fate.append(f"nack at {record.let_go:.3f} s")

    def took(self, index: int, began: float, outcome: Any) -> None:
        if outcome.error is not None:
            self.maybe_takes.append(began)  # it may have moved a job it never learned of
            return
        got = outcome.value
        if got is None:
            wait = self.patience.get(index)
            if wait is not None and self.scheduler.vclock < wait[1]:
                self.take_once(index, wait[0], pause=(self.lease or LEASE_MS / 1000) / 10)
            return
        self.patience.pop(index, None)
        name = self.scheduler.clients[index].name
        if not isinstance(got, tuple | list) or len(got) != 2:
            self.fail(NO_PHANTOM, f"{name} take returned {got!r}, not (id, item) or None")
        delivery = self.deliver(index, name, as_compared(got[0]), as_compared(got[1]), began)
        self.new_holder = index
        self.follow_up(index, delivery)

    def follow_up(self, index: int, d: Delivery) -> None:
        """The consumer's work on `d`, then what it planned (or its death with the job in hand)."""
        work, then = self.plans.pop(index, (0.0, "ack"))
        queue = self.queues[index]
        seconds = work * (self.lease or LEASE_MS / 1000)
        if then == "die":
            if len(self.living_workers()) > 1:
                self.met[NO_LOSS] += 1
                self.kill(index)
                return
            then = "ack"
        if then == "nack" and not callable(getattr(queue, "nack", None)):
            then = "ack"
        if then == "extend" and not callable(getattr(queue, "extend", None)):
            then = "ack"
        if then == "extend":
            ms = int((self.lease or LEASE_MS / 1000) * 1000)

            def extend() -> Any:
                time.sleep(seconds / 2)
                d.extend_began = self.scheduler.vclock
                return queue.extend(d.job, ms)

            self.running[index] = ("extend", (d, ms))
            self.start(index, extend, f"work {seconds / 2:g} s, extend({d.job!r}, {ms})")
            return
        self.running[index] = (then, d)

        def finish() -> Any:
            time.sleep(seconds)
            d.let_go = self.scheduler.vclock
            return getattr(queue, then)(d.job)

        self.start(index, finish, f"work {seconds:g} s, {then}({d.job!r})")

    def extended(self, index: int, record: tuple[Delivery, int], outcome: Any) -> None:
        d, ms = record
        began = d.extend_began
        others = [x for x in self.deliveries if x.item == d.item and x.number > d.number]
        if began is not None and not refused(outcome) and not self.indeterminate(index):
            d.fate.append(f"extend({ms}) at {began:.3f} s")
            if began < d.valid_until and not others:
                d.valid_until = max(d.valid_until, began + ms / 1000)
                self.last_lease_end = max(self.last_lease_end, self.scheduler.vclock + ms / 1000)
        queue = self.queues[index]
        self.running[index] = ("ack", d)

        def finish() -> Any:
            d.let_go = self.scheduler.vclock
            return queue.ack(d.job)

        self.start(index, finish, f"ack({d.job!r})")

    # The end ------------------------------------------------------------------------------
    def check_quiescent(self) -> None:
        """no-loss: run every operation to its end, let twice the lease pass, and drain."""
        self.finish_all()
        if NO_LOSS not in self.claims or not self.server_keeps_time:
            return
        if self.lease is not None:
            until = self.last_lease_end + self.lease
            if until > self.scheduler.vclock:
                self.scheduler.advance(until - self.scheduler.vclock, note="twice the lease passes")
        drained = self.drain()
        self.check_loss(drained)

    def drain(self) -> int:
        """A fresh consumer (the probe) takes and acks until the queue has been empty for a lease
        (a moment, with no lease); how many jobs it got."""
        queue = self.queues[self.probe]
        span = self.lease * 1.25 if self.lease is not None else 0.5
        pause, idle, got = span / 5, 0.0, 0
        for _ in range(500):
            before = len(self.deliveries)
            self.running[self.probe] = ("take", self.scheduler.vclock)
            self.run_alone(self.probe, lambda: queue.take(0), "take(0) (drain)", max_steps=500)
            if len(self.deliveries) > before:
                got += 1
                idle = 0.0
                continue
            if idle >= span:
                break
            self.scheduler.advance(pause, note=f"the drain waits {pause:g} s")
            idle += pause
        return got


def machine_for(impl: Any) -> type[QueueMachine]:
    """A QueueMachine subclass for a catalog entry (or anything with factory, claims, name)."""
    return type(
        f"QueueMachine_{''.join(c if c.isalnum() else '_' for c in impl.name)}",
        (QueueMachine,),
        {"factory": staticmethod(impl.factory), "claims": frozenset(impl.claims)},
    )
