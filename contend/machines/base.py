"""What every scheduled machine shares: clients, the scheduler, and the rules about time.

Rules common to all families:

* `advance` - the scheduler lets clients perform a few round trips, one at a
  time. For each, Hypothesis draws an index into the runnable clients, 0
  meaning "keep the current one", so failing examples shrink towards fewer
  context switches.
  One advance in LOSE_ONE_IN (in LOSE_CONTENDED_ONE_IN while two clients or more are
  mid-operation, where a lost reply bites) also loses the reply of its first round trip: the server
  runs it, then the connection drops (or the client times out) before the reply arrives,
  and the client's own retry settings decide whether it is sent again. An operation that
  raises after such a loss is indeterminate, as Jepsen's `info`: it may or may not have
  taken effect, and no property blames it for failing.
* `crash` - a client abandons its operation mid-way (between two round trips);
  it never sends again and its connection is closed.
The servers keep the scheduler's virtual clock (contend.servers.clock): when it
jumps (every client asleep in a retry loop, or a stall) or a step costs its 1 ms,
TIME, TTLs and expiry on the server move with it, so a crashed holder's lease ends
when the survivors have waited long enough, not in real seconds, and to the
millisecond in every run of an example. Nothing rewrites a TTL. Before a jump the
machine reads (never writes) the TTLs of the keys the clients named, to put the
keys the jump runs out in the trace. On a server contend did not start
(--redis-url), which keeps its own time, the judgements that need time to pass
are not made (`server_keeps_time`).

On failure the machine notes the interleaving, client by client, with what
each round trip sent and received; Hypothesis prints it with the shrunk
example.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import itertools
import random
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

import redis
import redis.cluster
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.errors import InvalidArgument
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from contend.errors import Abandoned
from contend.impl.catalog import CLUSTER_SLOTS, PROGRESS
from contend.machines.connections import SyncView, async_connection, give_back, take_connection
from contend.machines.settings import keep_enabled
from contend.schedule import DrawChooser, Scheduler, Status
from contend.schedule.gating import LostReply
from contend.schedule.trace import lost_replies_note, resends_note, schedule_expression
from contend.servers.keyspace import Namespace, cluster_masters, new_run_id, placed_prefix
from contend.servers.slot_refusals import refusals_count, refusals_since
from contend.servers.tap import foreign_round_trip
from contend.servers.target import Target

#: The trace's note for a key the virtual clock ran out (contend.machines.stale_leases reads it).
EXPIRED_NOTE = "expires: its TTL passed"

#: Of this many advances, two lose the reply of their first round trip (`lose_one_in`: one of each
#: kind of loss). Rare: a lost reply turns the operation it hits into an indeterminate one, which
#: hides the races other properties need; at 2 in 16 most examples had one, and races a lock's
#: stale release needs took twice as many examples.
LOSE_ONE_IN = 48
#: Where a lost reply bites: while another client is in the middle of an operation too (a
#: waiter polls while the holder releases, a competitor is about to win, a second EXEC is in
#: flight), what the code sends in answer to the loss can harm that client. There two advances
#: in LOSE_CONTENDED_ONE_IN lose their first reply.
LOSE_CONTENDED_ONE_IN = 16
#: How long (virtual seconds) the operations under way at an example's end may take to finish,
#: and how many round trips that may take at most (a bound on the real time it costs).
FINISH_BOUND = 120.0
FINISH_STEP_CAP = 100_000


@functools.cache
def lose_one_in(n: int) -> st.SearchStrategy[LostReply | None]:
    """No loss, or a lost reply: in `n` draws, one of each kind (a dropped connection, a client-side
    timeout), so a reply is lost in 2 of `n`."""
    return st.sampled_from([None] * (n - 2) + [LostReply.CONNECTION, LostReply.TIMEOUT])


class PropertyViolated(AssertionError):
    """A family property broke: `property` is its catalog name, `detail` the evidence."""

    def __init__(self, prop: str, detail: str) -> None:
        super().__init__(f"{prop}: {detail}")
        self.property = prop
        self.detail = detail

    def __reduce__(self) -> tuple[type[PropertyViolated], tuple[str, str]]:
        return type(self), (self.property, self.detail)


class ScheduledMachine(RuleBasedStateMachine):
    """Base: `clients` clients of one implementation under a Scheduler, in a fresh namespace."""

    clients = 3
    #: Databases besides the client's that the implementation writes to (for cleanup).
    dbs: tuple[int, ...] = ()
    #: Whether the `crash` rule is on (a family may plan crashes its own way).
    crash_rule = True
    #: Virtual seconds an operation may take before it counts as hung (a liveness finding).
    operation_bound = 30.0
    #: Whether the implementation is async (its methods are coroutines on redis.asyncio clients):
    #: each client then gets a redis.asyncio.Redis, used only on that client's own event loop.
    asynchronous = False
    #: Whether `advance` may lose a round trip's reply (LOSE_ONE_IN).
    lose_replies = True
    #: Rules every example may use. Hypothesis's swarm testing turns a random subset of a machine's
    #: rules off for a whole example; without the rules that start operations and run their round
    #: trips an example does nothing (two examples in three on a lock machine). The other rules
    #: (faults, clock jumps) are still turned off in some examples, as swarm testing intends.
    essential_rules: frozenset[str] = frozenset({"advance"})

    #: What the machine judges only on servers that keep the virtual clock (contend started them),
    #: said when it runs on one that keeps its own (--redis-url); "" if nothing.
    judged_on_kept_time = ""
    #: The situation each property counted in `met` is judged in, in words ("a release after the
    #: lease ran out, beside a successor"): a claimed property whose situation no example met is
    #: reported "not exercised" by the schedule check. Properties judged all along are not listed.
    situations: ClassVar[dict[str, str]] = {}

    @classmethod
    def situations_judged(cls) -> dict[str, str]:
        """`situations`, less what this machine's configuration does not judge at all."""
        return dict(cls.situations)

    def __init__(
        self, target: Target, *, abandoned: threading.Event | None = None, namespace: str | None = None
    ) -> None:
        super().__init__()
        keep_enabled(self, self.essential_rules)
        # Code under test that draws random back-offs (pottery's Redlock) must draw the same ones
        # when an example is run again: seed the shared generator, and put it back at teardown.
        self._random_state = random.getstate()
        random.seed(0)
        # Nor may a garbage collection run finalizers (a lock that releases itself in __del__) in
        # the middle of an example: collection waits for the example to end.
        self._gc_was_enabled = gc.isenabled()
        gc.disable()
        self.target = target
        #: Set when the check running this machine is abandoned: stop at the next step.
        self.abandoned = abandoned
        #: Virtual time each client's operation in flight started, and the scheduler's `waited` then.
        self.op_started: dict[int, float] = {}
        self.op_waited: dict[int, float] = {}
        self.last_op_started = 0.0
        #: Do the servers keep the virtual clock (contend started them)? If not (--redis-url), no
        #: lease runs out in virtual time, and what needs one to is not judged.
        self.server_keeps_time = target.clock is not None
        self.admin = take_connection(target)
        self.ns = Namespace(self.admin, self._example_prefix(namespace), dbs=self.dbs, other_urls=target.also)
        #: Refusals because of hash slots before this example (on a Redis Cluster): one during it
        #: is the finding, whatever the implementation made of it.
        self._refusals_mark = refusals_count()
        self.scheduler = Scheduler(clock=target.clock)
        self.connections: list[redis.Redis] = []
        self.current: int | None = None
        self.in_flight: dict[int, str] = {}
        self.failed = False
        #: What `fail` reported, if it did.
        self.violation: PropertyViolated | None = None
        #: Clients whose operation in flight lost a reply (it is indeterminate if it raises).
        self.lost_reply_in: set[int] = set()
        self._known_keys: set[str] = set()
        self._views: list[SyncView] = []  # the harness's views of async code, closed at teardown
        self._key_prefix = self.ns.prefix + ":"
        #: How often each property's situation was met and judged (shared across a check's examples).
        self.met: Counter[str] = Counter()
        self.scheduler.on_jump = self._note_expiries
        self.scheduler.after_jump = self._expire_run_out
        #: The keys the last jump ran out, on each store (`_note_expiries`), for `_expire_run_out`.
        self._run_out: dict[str, list[str]] = {}
        for _ in range(self.clients):
            conn = async_connection(target) if self.asynchronous else take_connection(target)
            self.connections.append(conn)
            self.scheduler.add_client(connection=conn)
        self.setup_clients()

    def _example_prefix(self, base: str | None) -> str:
        """The example's namespace, under `base` (the check's, or one per process): on one server
        a fresh one per example; on a Redis Cluster one of `placements`, drawn by Hypothesis like
        any choice, so the same example puts the same keys on the same slots and nodes every time
        it runs, and the examples put `anchor` on each master in turn (keys an implementation
        derives without the hash tag land elsewhere, on a node that differs between placements)."""
        base = base or _PROCESS_PREFIX
        if not self.target.cluster:
            return f"{base}:{next(_examples)}"
        masters = cluster_masters(self.admin) or [""]
        placement = _drawn(self.placements * len(masters))
        prefix = placed_prefix(self.admin, base, placement, self.anchor)
        with contextlib.suppress(InvalidArgument):  # outside a Hypothesis example: nothing to note
            note(
                f"keys under {prefix}: placement {placement}, {self.anchor} on {masters[placement % len(masters)]}"
            )
        return prefix

    #: On a Redis Cluster: the key (as `ns.key(*anchor)`) placed on each master in turn, and how many
    #: placements there are per master (each with its own namespace).
    anchor: tuple[str, ...] = ("lock",)
    #: The trace's length when a property broke (what teardown adds after it is not evidence).
    trace_at_failure: int | None = None
    placements = 2

    # Subclasses --------------------------------------------------------------------
    # The hooks below are called by the machine itself, not declared as Hypothesis
    # @invariants: one `advance` rule takes several steps, and an invariant runs only
    # after a whole rule, so a violation would surface steps after the one that caused
    # it (and a planned crash would fire late). Each hook runs at the step it concerns.
    def setup_clients(self) -> None:
        """Build the implementation's objects, one per client."""

    def before_step(self, index: int) -> None:
        """Client `index` is about to take a step: note what the step may change."""

    def after_step(self) -> None:
        """React to the step just taken: bookkeeping, and events planned for this point
        (a crash after a client's k-th round trip). Runs before `check_step`."""

    def completed(self, index: int) -> None:
        """Client `index` just finished an operation: check what it returned (its outcome is in
        the scheduler)."""

    def check_step(self) -> None:
        """Properties that must hold after every step."""

    def check_quiescent(self) -> None:
        """Properties that must hold when no operation is in flight (at teardown): between
        rules, clients are mid-operation, so these cannot be @invariants either."""

    # Helpers ------------------------------------------------------------------------
    def harness_object(self, make: Callable[[Any], Any]) -> Any:
        """An object of the implementation for the harness's own reads (outside the schedule,
        at quiescence): `make(connection)` builds it. For async code, a view whose method calls
        run to their end at once, on a loop and client of its own (closed at teardown)."""
        if not self.asynchronous:
            return make(self.admin)
        view = SyncView(make, self.target)
        self._views.append(view)
        return view

    def idle_clients(self) -> list[int]:
        return [c.index for c in self.scheduler.clients if c.status is Status.IDLE]

    def survivors(self) -> int:
        """The machine's clients that have not crashed (threads their code started not counted)."""
        return sum(1 for c in self.scheduler.clients if c.status is not Status.CRASHED and not c.adopted)

    def busy_clients(self) -> list[int]:
        """The machine's clients in the middle of an operation (a crash takes their threads too)."""
        return [
            c.index
            for c in self.scheduler.clients
            if c.status in (Status.READY, Status.SLEEPING) and not c.adopted
        ]

    def start(self, index: int, operation: Callable[[], Any], label: str) -> None:
        self.lost_reply_in.discard(index)
        self.in_flight[index] = label
        self.op_started[index] = self.scheduler.vclock
        self.op_waited[index] = self.scheduler.waited_by(index)
        self.scheduler.start(index, operation, label)
        self._after_progress(index)

    def run_alone(self, index: int, operation: Callable[[], Any], label: str, max_steps: int = 200) -> Any:
        """Run one operation on client `index` to its end while every other client stays paused
        (a probe of what the server holds now); its outcome."""
        self.start(index, operation, label)
        taken = self.step_alone(index, max_steps)
        client = self.scheduler.clients[index]
        if client.status not in (Status.IDLE, Status.CRASHED):  # a planned crash ends it too
            whose = ", ".join(f"{name} {n}" for name, n in taken.most_common())
            states = ", ".join(
                f"{self.scheduler.clients[i].name} {self.scheduler.clients[i].status.value}"
                for i in self.scheduler.own_clients(index)
            )
            self.fail(
                PROGRESS,
                f"{client.name} {label} did not finish in {max_steps} round trips on its own "
                f"(steps taken: {whose or 'none'}; now {states})",
            )
        return client.outcome

    def step_alone(self, index: int, max_steps: int, until: Callable[[], bool] | None = None) -> Counter[str]:
        """Step client `index` while it has something to do (the operation in flight, and any its
        end starts), at most `max_steps` round trips, every other client paused, and (given
        `until`) until that says enough. Threads its code started run too (redis-py's async
        cluster pipeline runs each command of a transaction on a thread of its own and joins it):
        they are the same client's work. Returns the steps taken, by client name."""
        taken: Counter[str] = Counter()  # steps by client name: what a run that did not finish did
        for _ in range(max_steps):
            if until is not None and until():
                return taken
            # Only its own clients count: another one ready to send, paused, must not keep the
            # clock from jumping while this one sleeps (in a retry, or in the join of its thread).
            ready = self.scheduler.runnable(among=self.scheduler.own_clients(index))
            if not ready:
                return taken
            who = index if index in ready else ready[0]
            self.before_step(who)
            self.scheduler.step(who)
            taken[self.scheduler.clients[who].name] += 1
            self._after_progress(who)
        return taken

    #: time.monotonic() of the first violation any machine of the run found (set by a caller
    #: that wants to know how long the search took before shrinking: a one-element list)
    first_violation: list[float] | None = None
    #: What a property could not be judged on, by its cause, collected over the examples of a run
    #: (set by a caller that reports it: a dict shared by the examples); None: nobody asks.
    unjudged: dict[str, str] | None = None

    def fail(self, prop: str, detail: str) -> None:
        """Report that property `prop` (a catalog name) broke, with `detail` as the evidence."""
        self.failed = True
        detail += resends_note(self.scheduler.trace) + lost_replies_note(self.scheduler.trace)
        self.violation = PropertyViolated(prop, detail)
        self.trace_at_failure = len(self.scheduler.trace)
        if self.first_violation is not None and not self.first_violation:
            self.first_violation.append(time.monotonic())
        note("interleaving (step, client, what it sent → what came back):\n" + self.scheduler.format_trace())
        note(f"schedule for ReplayChooser: {schedule_expression(self.scheduler.schedule)}")
        raise self.violation

    def indeterminate(self, index: int) -> bool:
        """Did client `index`'s operation that just ended lose a reply and raise? Then it may or may
        not have taken effect (Jepsen's `info`): no property blames it for failing."""
        outcome = self.scheduler.clients[index].outcome
        return index in self.lost_reply_in and outcome.error is not None

    def _after_progress(self, index: int) -> None:
        if self.abandoned is not None and self.abandoned.is_set():
            raise Abandoned("the check was abandoned")
        last = self.scheduler.trace[-1] if self.scheduler.trace else None
        if last is not None and last.lost and last.client == self.scheduler.clients[index].name:
            self.lost_reply_in.add(index)
        if last is not None:
            for cmd in last.sent:
                self._known_keys.update(arg for arg in cmd[1:] if self._key_prefix in arg)
        if (foreign := foreign_round_trip()) is not None:
            raise foreign  # no verdict: the run stops (contend.check.framework says so)
        if refused := refusals_since(self._refusals_mark):
            # Before the symptoms (a refused acquire, a hang): the refusal is the finding.
            if not refused[0].error:  # redis-py's: the trace has no reply that shows it
                self.scheduler.note(
                    f"{refused[0].command} refused by {refused[0].refused_by}: its keys span slots"
                )
            self.fail(CLUSTER_SLOTS, str(refused[0]))
        client = self.scheduler.clients[index]
        if client.status is Status.IDLE and index in self.in_flight:
            del self.in_flight[index]
            #: When the operation that just ended started (virtual time), for `completed`.
            self.last_op_started = self.op_started.pop(index, self.scheduler.vclock)
            self.op_waited.pop(index, None)
            self.completed(index)
        self.after_step()
        self.check_step()
        self._check_bound()

    def _check_bound(self) -> None:
        """PROGRESS: an operation that has waited longer than `operation_bound` virtual seconds
        (in sleeps and blocking calls; stalls the harness imposes do not count) hangs."""
        for index, since in list(self.op_waited.items()):
            client = self.scheduler.clients[index]
            waited = self.scheduler.waited_by(index) - since
            if client.status in (Status.READY, Status.SLEEPING) and waited > self.operation_bound:
                self.fail(
                    PROGRESS,
                    f"{client.name} {self.in_flight.get(index, 'its operation')} had waited "
                    f"{waited:.1f} virtual seconds without returning (bound {self.operation_bound:g} s): it hangs",
                )

    def _note_expiries(self, seconds: float) -> None:
        """The virtual clock is about to jump by `seconds`, and the servers' with it: put in the
        trace the keys the jump runs out (the namespace's keys the clients named, script KEYS
        included; one pipelined PTTL per server reads them, and nothing is written)."""
        keys = sorted(self._known_keys)
        self._run_out = {}
        if not keys or not self.server_keeps_time:
            return
        several = len(self.ns.dbs) + len(self.ns.other_urls) > 1
        for where, client in self.ns.stores():
            with client.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.pttl(key)
                ttls = pipe.execute()
            for key, pttl in zip(keys, ttls, strict=True):
                if 0 <= pttl < seconds * 1000:
                    self.scheduler.note(f"{key}{f' ({where})' if several else ''} {EXPIRED_NOTE}")
                    self._run_out.setdefault(where, []).append(key)

    def _expire_run_out(self) -> None:
        """The clock has jumped: expire now the keys it ran out (one EXISTS each, which deletes an
        expired key as a read does), as the server's active expiry would within its next cycles.
        That cycle runs in real time, so whether it had deleted such a key before a client's next
        command (Redis 6.2 then lets a WATCH on the absent key pass, and aborts one on the key it
        deletes later) would differ between two runs of the same example."""
        if not self._run_out:
            return
        for where, client in self.ns.stores():
            keys = self._run_out.get(where, [])
            if keys:
                with client.pipeline(transaction=False) as pipe:
                    for key in keys:
                        pipe.exists(key)
                    pipe.execute()
        self._run_out = {}

    # Rules -----------------------------------------------------------------------------
    @precondition(lambda self: bool(self.scheduler.runnable()))
    @rule(data=st.data(), steps=st.integers(1, 4))
    def advance(self, data: st.DataObject, steps: int) -> None:
        """Up to `steps` round trips, each by a client Hypothesis picks (0: the current one); the
        first may lose its reply (two advances in LOSE_ONE_IN, or in LOSE_CONTENDED_ONE_IN while
        another client is mid-operation too)."""
        choose = DrawChooser(data)
        for step in range(steps):
            ready = self.scheduler.runnable()
            if not ready:
                return
            self.current = choose(self.first_choice(ready), ready)
            lose = None
            if step == 0 and self.lose_replies:
                odds = lose_one_in(self.lost_reply_odds(self.current))
                lose = data.draw(odds, label="reply lost")
            self.before_step(self.current)
            client = self.scheduler.clients[self.current]
            self.scheduler.step(self.current, lose=lose if client.status is Status.READY else None)
            self._after_progress(self.current)

    def lost_reply_odds(self, index: int) -> int:
        """One in how many of client `index`'s round trips (the first of an advance) loses its
        reply: LOSE_CONTENDED_ONE_IN while another client is mid-operation too, where what the
        code sends in answer can harm it; LOSE_ONE_IN otherwise."""
        others = [i for i in self.busy_clients() if i != index]
        return LOSE_CONTENDED_ONE_IN if others else LOSE_ONE_IN

    def first_choice(self, ready: list[int]) -> int | None:
        """The client the schedule's first choice runs (index 0 of what Hypothesis draws from:
        the choice it makes most often and shrinks to): by default the current one, so an
        operation runs on unless Hypothesis picks another."""
        return self.current

    @precondition(lambda self: self.crash_rule and bool(self.busy_clients()) and self.survivors() > 1)
    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        index = data.draw(st.sampled_from(self.busy_clients()), label="crashed client")
        self.scheduler.crash(index)
        self.in_flight.pop(index, None)
        self.op_started.pop(index, None)
        self.op_waited.pop(index, None)
        self.crashed(index)

    def crashed(self, index: int) -> None:
        """Client `index` crashed mid-operation."""

    # The end --------------------------------------------------------------------------
    def teardown(self) -> None:
        try:
            if not self.failed:  # after a violation, only clean up: its report must stand
                self.finish_all()
                self.check_quiescent()
        finally:
            self.scheduler.close()
            for view in self._views:
                view._close()
            if self._gc_was_enabled:
                gc.enable()
            random.setstate(self._random_state)
            self.ns.cleanup()
            for conn in [*self.connections, self.admin]:
                if isinstance(conn, (redis.Redis, redis.cluster.RedisCluster)):  # not an async one
                    give_back(self.target, conn)

    def finish_all(self, max_steps: int = 5_000) -> None:
        """Run every client to the end of its operation: the current one while it can, then the
        next runnable one in turn (`next_in_turn`), so no sleeper whose time has come is passed
        over for ever. A livelock is `max_steps` round trips in a row with no client waking from
        a sleep (clients that spin), or FINISH_BOUND seconds of virtual time (clients that sleep
        and retry for ever), or `operation_bound` if longer (a queue's consumer may work for
        more than a lease of several minutes); pollers waiting out a slow leader or a long lease
        are neither, however many round trips their polls take."""
        started, spinning = self.scheduler.vclock, 0
        for _ in range(FINISH_STEP_CAP):
            ready = self.scheduler.runnable()
            if not ready:
                return
            self.current = next_in_turn(self.current, ready)
            woke = self.scheduler.clients[self.current].status is Status.SLEEPING
            self.before_step(self.current)
            self.scheduler.step(self.current)
            self._after_progress(self.current)
            spinning = 0 if woke else spinning + 1
            if spinning >= max_steps:
                self.fail(
                    PROGRESS,
                    f"operations still running after {max_steps} round trips in a row with no client "
                    "waking from a sleep (livelock)",
                )
            if self.scheduler.vclock - started > max(FINISH_BOUND, self.operation_bound):
                break
        self.fail(
            PROGRESS,
            f"operations still running {self.scheduler.vclock - started:.1f} s of virtual time after "
            "the last rule (livelock or deadlock)",
        )


def next_in_turn(current: int | None, ready: list[int]) -> int:
    """Who runs next at an example's end: the current client while it can (its operation runs on),
    else the first runnable one after it in index order, round the clients (round robin). Always
    the lowest index instead starved the highest: two waiters polling every 3 ms, each poll a wake
    and a round trip of 1 ms each, are never all asleep, so a leader's heartbeat thread (c0.t1,
    the last client) never ran again, the leader's join of it never ended, and the example was
    called a livelock."""
    if current in ready:
        return current
    later = [i for i in ready if current is not None and i > current]
    return later[0] if later else ready[0]


#: The namespace of examples whose machine was given none (one per process), and their count.
_PROCESS_PREFIX = f"contend:{new_run_id()}"
_examples = itertools.count()


def _drawn(count: int) -> int:
    """A number below `count` drawn by the Hypothesis example under way (0 outside one)."""
    try:
        data = current_build_context().data
    except InvalidArgument:
        return 0
    return int(data.draw(st.integers(0, count - 1)))
