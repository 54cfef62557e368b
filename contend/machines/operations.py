"""The machine of a user's own primitive (`--kind operations`): clients call its operations with
arguments Hypothesis draws while Hypothesis interleaves their round trips, and the history is
judged against the sequential specification by the linearizability search.

Each operation runs on an object the factory makes anew on the example's namespace (the
primitive's state lives in Redis, as it must for clients in other processes). Besides `advance`
(whose round trips may lose their replies) and `crash`, Hypothesis may stall the clients (the
virtual clock, and the server's, jump by STALL_SECONDS while operations are under way) and skew
one client's wall clock by SKEW_SECONDS.

Properties:

* linearizable (at the end, every operation run to its end): some order of the operations,
  consistent with real time (one that returned before another began comes first), gives every
  result that was observed when run one at a time by the specification (the user's model, or
  the implementation itself on a fresh namespace). An operation whose reply was lost and that
  raised, or whose client crashed in it, has an unknown outcome: it may have taken effect at any
  point after it began, or never.
* no-spurious-errors (when an operation returns): an operation raises no Redis error (a script
  error, WRONGTYPE, a WatchError let out of a transaction, a cluster client's refusal) other than
  the connection errors of a lost reply. Any other exception is an outcome like a value, compared
  with the specification's.

On a Redis Cluster the same: the re-run specification's namespace is read and put back on every
node, and a command, script or transaction whose keys span slots is cluster-slots (the base
machine's), so the keys one command names must share a hash tag.

A result that differs between two sequential runs of the same operations (a random token, a
timestamp) cannot be judged against a re-run: the example is then not judged, and the check says
so (give a model).
"""

from __future__ import annotations

import itertools
from typing import Any, ClassVar

import redis
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule
from redis.exceptions import RedisClusterException

from contend.history.checker import check_history
from contend.history.records import Record
from contend.history.verdict import Linearizability
from contend.impl.catalog import LINEARIZABLE, NO_SPURIOUS_ERRORS
from contend.machines.base import EXPIRED_NOTE, ScheduledMachine
from contend.machines.connections import async_connection, take_connection
from contend.machines.sequential import ModelSpec, Outcome, ReRunSpec, SpecModel, expected_after
from contend.models.base import UNKNOWN
from contend.servers.target import Target

#: Operations one example may start (the search is exponential in the overlapping ones).
MAX_OPERATIONS = 10
#: How far a stall moves the virtual clock, and a skew one client's wall clock (seconds).
STALL_SECONDS = 2.0
SKEW_SECONDS = 5.0
#: Seconds the linearizability search of one example may take.
SEARCH_SECONDS = 10.0
#: The errors an operation may raise after its reply was lost (its outcome is then unknown).
CONNECTION_ERRORS = (redis.ConnectionError, redis.TimeoutError)
#: What no-spurious-errors judges: Redis's errors, and a cluster client's refusals, which redis-py
#: does not make RedisErrors (a WATCH outside a transaction on a cluster pipeline raises one on
#: every call: taken for an outcome like a value, the re-run would raise it too and pass it).
REDIS_ERRORS = (redis.RedisError, RedisClusterException)


class OperationsMachine(ScheduledMachine):
    """Subclass per primitive with `factory`, `operations` (contend.subject.operations.
    OperationList) and `claims` set."""

    factory: Any = None
    operations: Any = None
    claims: frozenset[str] = frozenset({LINEARIZABLE, NO_SPURIOUS_ERRORS})
    essential_rules = frozenset({"begin", "advance"})
    crash_rule = False  # crash_client: rarer, and a new process takes the crashed one's place
    anchor = ("",)
    judged_on_kept_time = "stalls (the clock does not jump)"
    #: The re-run specifications of this class, by (server URL, check namespace): machine_for
    #: gives each class its own.
    reruns: ClassVar[dict[tuple[str, str], ReRunSpec]] = {}
    #: What an example the machine could not judge leaves unjudged (contend.check.schedule says it).
    unjudged_property = LINEARIZABLE
    situations: ClassVar[dict[str, str]] = {LINEARIZABLE: "two operations under way at once"}

    def __init__(self, target: Target, **kwargs: Any) -> None:
        #: The check's namespace (each example's is one below it), where the re-run runs.
        self.base = kwargs.get("namespace") or ""
        self.records: list[Record] = []
        self.pending: dict[int, tuple[int, str, tuple[Any, ...]]] = {}  # client -> (process, f, args)
        self.processes = itertools.count()
        self.clock = itertools.count(1)
        self.begun = 0
        self.client_of: dict[int, str] = {}  # process -> the client that ran its operation
        #: Did two operations of this example overlap (one began while another was under way)?
        self.overlapped = False
        super().__init__(target, **kwargs)

    @precondition(lambda self: bool(self.idle_workers()))
    @rule(
        client=st.integers(0, 3),
        together=st.integers(1, 3),
        same=st.booleans(),
        data=st.data(),
        skew=st.sampled_from([0.0] * 8 + [SKEW_SECONDS, -SKEW_SECONDS]),
    )
    def begin(self, client: int, together: int, same: bool, data: st.DataObject, skew: float) -> None:
        """Up to `together` idle clients each call an operation with arguments its strategy draws
        (operations begun together overlap, where races are; with `same`, all the one operation,
        as two reservations or two first payments of a request race), the first now and then
        with its wall clock (time.time) jumped ahead or back. Once the example has begun
        MAX_OPERATIONS it does nothing (a rule that can always run)."""
        idle = self.idle_workers()
        ops = self.operations.operations
        op = ops[0]
        for k in range(min(together, len(idle))):
            if self.begun >= MAX_OPERATIONS:
                return
            index = idle[(client + k) % len(idle)]
            if not (same and k):
                op = ops[data.draw(st.integers(0, len(ops) - 1), label="operation")]
            args = tuple(data.draw(op.args, label=f"{op.name} arguments"))
            if skew and not k:
                self.scheduler.skew(index, skew)
            self.call(index, op.name, args)

    def call(self, index: int, name: str, args: tuple[Any, ...]) -> None:
        """Client `index` starts `name(*args)` on an object the factory makes anew (recorded)."""
        make, conn, where = type(self).factory, self.conn_of[index], self.ns.prefix
        process = next(self.processes)
        self.overlapped = self.overlapped or bool(self.pending)
        self.pending[index] = (process, name, args)
        self.client_of[process] = self.scheduler.clients[index].name
        self.records.append(Record(process, "invoke", name, value=args, time=next(self.clock)))
        self.begun += 1
        self.start(index, lambda: getattr(make(conn, where), name)(*args), f"{name}{_args_text(args)}")

    @precondition(lambda self: bool(self.scheduler.runnable()))
    @rule(data=st.data(), steps=st.integers(1, 4), stall=st.sampled_from([False] * 7 + [True]))
    def advance(self, data: st.DataObject, steps: int, stall: bool) -> None:
        """Round trips as the base machine makes them; then, with `stall`, every client pauses
        where it is while the clock (the server's too) moves on by STALL_SECONDS."""
        super().advance(data, steps)
        if stall and self.server_keeps_time and self.busy_clients():
            self.scheduler.advance(STALL_SECONDS, note=f"{STALL_SECONDS:g} s pass (a stall)")

    @precondition(lambda self: bool(self.busy_clients()))
    @rule(data=st.data(), dies=st.sampled_from([False, False, False, True]))
    def crash_client(self, data: st.DataObject, dies: bool) -> None:
        """A client dies in the middle of its operation (one draw in four), and a new process (a
        new connection) takes its place."""
        if not dies:
            return
        index = data.draw(st.sampled_from(self.busy_clients()), label="crashed client")
        self.scheduler.crash(index)
        self.in_flight.pop(index, None)
        self.op_started.pop(index, None)
        self.op_waited.pop(index, None)
        self.pending.pop(index, None)  # no completion: info
        self.conn_of.pop(index, None)
        conn = async_connection(self.target) if self.asynchronous else take_connection(self.target)
        self.connections.append(conn)
        fresh = self.scheduler.add_client(connection=conn)
        self.conn_of[fresh] = conn
        self.scheduler.note(
            f"{self.scheduler.clients[fresh].name} starts in place of {self.scheduler.clients[index].name}"
        )

    def step_client(self, index: int, lose: Any = None) -> None:
        """One round trip of client `index` (for tests that force a schedule by hand)."""
        self.before_step(index)
        self.scheduler.step(index, lose=lose)
        self._after_progress(index)

    def idle_workers(self) -> list[int]:
        """Idle clients of the machine's own (not threads the code started, not crashed ones)."""
        return [i for i in self.idle_clients() if i in self.conn_of]

    def setup_clients(self) -> None:
        self.conn_of = dict(enumerate(self.connections))

    def first_choice(self, ready: list[int]) -> int | None:
        """The client whose round trip is the longest overdue (round robin): operations under way
        take turns unless Hypothesis picks otherwise, so two that overlap interleave (a read of
        each before either writes) in the examples the search starts from and shrinks to."""
        last = {c.index: -1 for c in self.scheduler.clients}
        for position, index in enumerate(self.scheduler.schedule):
            last[index] = position
        return min(ready, key=lambda i: (last.get(i, -1), i))

    def completed(self, index: int) -> None:
        if index not in self.pending:
            return
        process, name, args = self.pending.pop(index)
        client = self.scheduler.clients[index]
        outcome = client.outcome
        if self.indeterminate(index):
            return  # no completion: info, it may or may not have taken effect
        error = outcome.error
        if isinstance(error, REDIS_ERRORS) and NO_SPURIOUS_ERRORS in self.claims:
            self.fail(
                NO_SPURIOUS_ERRORS,
                f"{client.name} {name}{_args_text(args)} raised {type(error).__name__}: {error}",
            )
        result = Outcome(raised=type(error).__name__) if error is not None else Outcome(outcome.value)
        self.records.append(Record(process, "ok", name, value=result, time=next(self.clock)))

    def check_quiescent(self) -> None:
        if LINEARIZABLE not in self.claims or not self.records:
            return
        spec = self.specification()
        try:
            verdict = check_history(self.records, SpecModel(spec), timeout=SEARCH_SECONDS)
            if verdict.outcome is Linearizability.LINEARIZABLE:
                if self.overlapped:
                    self.met[LINEARIZABLE] += 1
                return
            if verdict.outcome is Linearizability.UNKNOWN:
                if self.unjudged is not None:
                    self.unjudged["search"] = (
                        f"the search of one example's {len(verdict.calls)} operations ran past "
                        f"{SEARCH_SECONDS:g} s"
                    )
                return
            result = verdict.partitions[0]
            if self._expired():
                return
            if isinstance(spec, ReRunSpec) and not self._deterministic(spec, result):
                return
            self.fail(LINEARIZABLE, self._explain(spec, result))
        finally:
            if isinstance(spec, ReRunSpec):
                spec.close()

    def specification(self) -> ReRunSpec | ModelSpec:
        """The user's model, or the implementation re-run on a namespace of its own under the
        check's: one per machine class and target, so what it ran for one example (the same
        orders come back while Hypothesis shrinks) serves the next."""
        ops = type(self).operations
        if ops.model is not None:
            return ModelSpec(ops.model)
        key = (self.target.url, self.base)
        spec = type(self).reruns.get(key)
        if spec is None:
            target = self.target
            spec = type(self).reruns[key] = ReRunSpec(
                type(self).factory,
                self.admin,
                self.base or self.ns.prefix,
                async_client=(lambda: async_connection(target)) if self.asynchronous else None,
            )
        spec.client = self.admin  # this example's connection (they go back to a pool)
        return spec

    def _expired(self) -> bool:
        """Did the clock run out a key's TTL during the example (a stall)? The specification has no
        time, so such an example is not judged (said), never called a violation."""
        gone = [s.note for s in self.scheduler.trace if s.note and s.note.endswith(EXPIRED_NOTE)]
        if gone and self.unjudged is not None:
            self.unjudged["expiry"] = (
                f"a key's TTL ran out while the clock moved on ({gone[0]}): the specification has no "
                f"time; keep TTLs longer than a few stalls of {STALL_SECONDS:g} s in the check"
            )
        return bool(gone)

    def _deterministic(self, spec: ReRunSpec, result: Any) -> bool:
        """Does the re-run give the same results twice for the order the evidence shows? If not,
        the implementation's results depend on something besides its operations (a random token,
        the clock): a re-run cannot judge it, and the example is not judged."""
        order = [
            (c.f, c.value) for c in [*result.linearization, *([result.culprit] if result.culprit else [])]
        ]
        if spec.replay(order) == spec.replay(order):
            return True
        if self.unjudged is not None:
            self.unjudged["random"] = (
                "two sequential runs of the same operations gave different results (a random token, a "
                "timestamp?): the implementation cannot be its own specification; give a model (--model)"
            )
        return False

    def _explain(self, spec: ReRunSpec | ModelSpec, result: Any) -> str:
        culprit = result.culprit
        fitted = "; ".join(
            f"{self.client_of.get(c.process, '')} {c.f}{_args_text(c.value)} → {_shown(c.output)}"
            for c in result.linearization
        )
        if culprit is None:
            return f"no order of the operations consistent with real time gives the results observed ({spec.name})"
        expected = expected_after(spec, result)
        head = f"{self.client_of.get(culprit.process, '')} {culprit.f}{_args_text(culprit.value)} {_did(culprit.output)}"
        return (
            f"{head}, which no order of the operations consistent with real time gives: after the longest "
            f"order that fits ({fitted or 'nothing'}), {spec.name} {_did(expected, 'gives')}"
        )


def _shown(value: Any) -> str:
    """An outcome in the evidence: its value, `raised KeyError`, or ? (unknown)."""
    return "?" if value is None or value is UNKNOWN else repr(value)


def _did(outcome: Any, verb: str = "returned") -> str:
    """'returned True', 'raised KeyError' (an exception is an outcome too)."""
    if isinstance(outcome, Outcome) and outcome.raised:
        return f"raised {outcome.raised}"
    return f"{verb} {_shown(outcome)}"


def _args_text(args: Any) -> str:
    return "(" + ", ".join(repr(a) for a in args) + ")"


def machine_for(impl: Any) -> type[OperationsMachine]:
    """An OperationsMachine subclass for a subject (its factory, operations and claims)."""
    return type(
        f"OperationsMachine_{''.join(c if c.isalnum() else '_' for c in impl.name)}",
        (OperationsMachine,),
        {
            "factory": staticmethod(impl.factory),
            "operations": impl.operations,
            "claims": frozenset(impl.claims),
            "reruns": {},
            # Code for redis.asyncio: async clients, each operation's coroutine run on its
            # client's own loop; the re-run specification runs it on a loop of its own.
            "asynchronous": bool(getattr(impl, "asynchronous", False)),
        },
    )
