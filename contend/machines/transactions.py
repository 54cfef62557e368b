"""The transaction machine: clients move money between three accounts and audit them.

Hypothesis draws transfers (a source, a destination, an amount that may
overdraw it) and audits of every account, and interleaves their round trips.
After each operation ends, the conflict graph of the example so far
(`contend.history.isolation`, built from the order the server ran the round
trips) must have no cycle; the model (`contend.models.bank`) judges the rest:

* serializable: no cycle in the conflict graph (named for what it shows: G0,
  G1c, lost update, read skew, write skew, write skew under an overdraft guard,
  with its edges: `T3 -rw(acct:a)-> T5 -ww(acct:b)-> T3`);
* consistent-audit: an audit of every account sees the opening total, no
  account below zero (a state some serial order produces);
* applies-once: when nothing is in flight, the balances are the opening ones
  plus each completed transfer once and each of unknown outcome (its reply
  lost, its client crashed) once or not at all; money is conserved and no
  account is below zero.

An operation that lost a reply and raised is indeterminate (Jepsen's `info`):
its reads are no evidence and its transfer may or may not have applied.

What each round trip read and wrote is what the server ran for it, from its
record (contend.servers.record: MONITOR, with a marker before and after each
round trip, on the servers contend starts), each command placed by the server's
own command table (contend.history.access). The data the model judges are the
keys the bank's `open` wrote, as the record shows them (whatever their names);
every key the code touched is cleaned up with the example, if it holds the
example's namespace. Where there is no record (a Redis Cluster, --redis-url),
the commands the clients sent stand in, and a script counts as reading and
writing every key it names. A command the server's table cannot place leaves
`serializable` unjudged in the examples where it touched data (`unjudged` names
it); the other properties are judged as ever.

A broken sum is reported alone only where the graph has no cycle; when a
transfer whose client crashed (or whose reply was lost) had written one of its
accounts and not the other, it is named a money-moving crash.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import dataclass, field
from typing import Any, ClassVar

import redis
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.history.access import CommandTable, UnknownCommand
from contend.history.isolation import Executed, Judgement, RoundTrip, judge, op_accesses
from contend.impl.catalog import APPLIES_ONCE, CONSISTENT_AUDIT, SERIALIZABLE
from contend.machines.base import ScheduledMachine
from contend.models.bank import Move, explain_audit, explain_final
from contend.schedule import Status
from contend.schedule.trace import TraceEntry
from contend.servers.record import Ran, RecordBroken, ServerRecord, between, command_table, get_keys
from contend.servers.tap import RoundTrips, tap
from contend.servers.target import Target
from contend.servers.urls import node_url

ACCOUNTS = ("a", "b", "c")
OPENING = 10
#: Amounts a transfer moves: small ones, and the whole opening balance (two of those overdraw).
AMOUNTS = (3, 10)

#: The server's command table, per server (its URL and process): read once.
_tables: dict[tuple[str, Any], CommandTable] = {}
_tables_lock = threading.Lock()


def server_table(target: Target) -> CommandTable:
    """The command table of the target's server, read once (COMMAND), with the server's own
    COMMAND GETKEYS[ANDFLAGS] for the commands only it can place."""
    key = (target.url, getattr(target.embedded, "pid", None))
    with _tables_lock:
        table = _tables.get(key)
        if table is None:
            # One server's table (on a Redis Cluster, the node the URL names: every node has the same).
            client = redis.Redis.from_url(node_url(target.url), socket_connect_timeout=5)
            table = _tables[key] = CommandTable(
                command_table(client), lambda args: get_keys(client, args), describe=target.description
            )
        return table


def open_record(target: Target) -> ServerRecord | None:
    """The record of what the target's server runs: on one server contend started, not a Redis
    Cluster's nodes or a server given by --redis-url (contend.servers.record says why)."""
    if target.embedded is None or target.cluster:
        return None
    try:
        return ServerRecord(target.url)
    except (OSError, RecordBroken):
        return None


@dataclass
class Operation:
    name: str  # T1, T2, ... in the order they started
    client: int
    label: str
    move: Move | None = None  # None: an audit
    status: str = "running"  # running, ok, raised, maybe (indeterminate or crashed)
    value: Any = None
    crashed: bool = False
    #: The operations under way at some moment while this one was (their names).
    beside: set[str] = field(default_factory=set)


class TransactionMachine(ScheduledMachine):
    factory: Any = None
    claims: frozenset[str] = frozenset({SERIALIZABLE, CONSISTENT_AUDIT, APPLIES_ONCE})
    anchor = ("bank",)
    essential_rules = frozenset({"begin", "advance"})  # swarm testing never turns them off
    situations: ClassVar[dict[str, str]] = {
        SERIALIZABLE: "two transactions under way at once",
        CONSISTENT_AUDIT: "an audit under way beside a transfer",
        APPLIES_ONCE: "a transfer cut off by a lost reply or a crash",
    }

    def __init__(self, target: Target, **kwargs: Any) -> None:
        self.operations: list[Operation] = []
        self.running: dict[int, Operation] = {}  # client -> its operation in flight
        self.steps: list[tuple[str, TraceEntry]] = []  # (operation, its round trip), server order
        self.seen = 0  # trace entries already sorted into steps
        self.last_round_trip: dict[str, int] = {}  # client name -> trace position of its last one
        #: The keys the bank's `open` wrote, and for each the accounts it holds.
        self.data_keys: dict[str, set[str]] = {}
        self.banks: list[Any] = []
        #: Seconds spent building and checking conflict graphs in this example, and reading the
        #: server's record (markers included).
        self.graph_seconds = 0.0
        self.record_seconds = 0.0
        self.table = server_table(target)
        self.record = open_record(target)
        self._marks: dict[int, tuple[str, str]] = {}  # trace index -> the markers around its round trip
        self._ran: dict[int, list[Ran]] = {}  # trace index -> what the server ran for it
        self._last_mark = ""  # the newest marker not read through yet
        self._read_at = ""  # the marker read through last
        #: The newest marker after which the harness sent nothing ("" when it did): it begins the
        #: next round trip's part of the record (one marker per round trip, not two).
        self._boundary = ""
        self._begin: tuple[str, int, int] | None = None  # marker, client, trace length before the step
        self._asked = self.table.asked
        self._unplaced: list[UnknownCommand] = []
        #: An audit that saw a total no serial order produces (reported at quiescence).
        self.broken_audit = ""
        try:
            super().__init__(target, **kwargs)
        except BaseException:
            if self.record is not None:  # a MONITOR nobody reads would fill the server's memory
                self.record.close()
            raise

    def setup_clients(self) -> None:
        factory = type(self).factory
        tapped = None
        if self.record is None and not self.asynchronous:
            # No record: what the opener sends, through a connection of its own, tapped.
            conn = self.target.client()
            tapped = tap(conn)
            opener = factory(conn, self.ns.prefix)
        else:
            # The harness's own bank object: on its connection; for async code a view whose calls
            # run to their end on a loop and client of its own.
            opener = self.harness_object(lambda conn: factory(conn, self.ns.prefix))
        try:
            for account in ACCOUNTS:
                wrote = self._written_by(lambda account=account: opener.open(account, OPENING), tapped)
                for key in wrote:
                    self.data_keys.setdefault(key, set()).add(account)
        finally:
            if tapped is not None:
                conn.close()
        self._known_keys.update(self.data_keys)
        self.banks = [factory(conn, self.ns.prefix) for conn in self.connections]

    def _written_by(self, call: Any, tapped: RoundTrips | None) -> set[str]:
        """The keys `call()` wrote, run by the harness: as the server's record shows them; with no
        record, as the commands it sent through `tapped` say, or for async code the namespace's
        keys it made."""
        commands: list[tuple[tuple[str, ...], bool]] = []
        shown = False
        if self.record is not None:
            started = time.perf_counter()
            begin = self.record.mark("open")
            call()
            end = self._boundary = self.record.mark("opened")
            ran = between(self.record.read_through(end), begin, end)
            self._read_at = end
            self.record_seconds += time.perf_counter() - started
            commands = [(r.args, r.by_script) for r in ran]
            shown = self.record.shows_scripts
        elif tapped is None:
            before = {k for _, k in self.ns.keys()}  # noqa: SIM118 (a Namespace, not a dict)
            call()
            return {k.decode(errors="replace") for _, k in self.ns.keys() if k not in before}  # noqa: SIM118
        else:
            sent: list[list[list[str]]] = []
            tapped.commands = sent
            try:
                call()
            finally:
                tapped.commands = None
            commands = [(tuple(c), False) for trip in sent for c in trip]
        written: set[str] = set()
        for args, by_script in commands:
            placed = self.table.place(args, script_shown=shown and not by_script)
            written.update(a.key for a in placed.accesses if a.writes)
        return written

    def label(self, key: str) -> str:
        """A key as the evidence shows it: without the namespace and hash tags (acct:a)."""
        at = key.find(self.ns.prefix)
        short = key[at + len(self.ns.prefix) :] if at >= 0 else key
        short = re.sub(r"\{[^}]*\}", "", short).strip(":./{}|#")
        return short or key

    # Rules -------------------------------------------------------------------------------
    @precondition(lambda self: bool(self.idle_clients()))
    @rule(
        client=st.integers(0, 3),
        audit=st.sampled_from([False, False, True]),  # a transfer two times in three
        src=st.integers(0, len(ACCOUNTS) - 1),
        offset=st.integers(1, len(ACCOUNTS) - 1),
        amount=st.sampled_from(AMOUNTS),
    )
    def begin(self, client: int, audit: bool, src: int, offset: int, amount: int) -> None:
        """A client audits every account, or moves `amount` from one account to another."""
        idle = self.idle_clients()
        index = idle[client % len(idle)]
        bank = self.banks[index]
        name = f"T{len(self.operations) + 1}"
        if audit:
            op = Operation(name, index, f"{name} balances({list(ACCOUNTS)})")
            call: Any = lambda: bank.balances(list(ACCOUNTS))  # noqa: E731
        else:
            move = (ACCOUNTS[src], ACCOUNTS[(src + offset) % len(ACCOUNTS)], amount)
            op = Operation(name, index, f"{name} transfer{move}", move)
            call = lambda: bank.transfer(*move)  # noqa: E731
        for other in self.running.values():
            other.beside.add(op.name)
            op.beside.add(other.name)
        self.operations.append(op)
        self.running[index] = op
        self.start(index, call, op.label)

    # Hooks -------------------------------------------------------------------------------
    def first_choice(self, ready: list[int]) -> int | None:
        """The client that has waited longest: by default the transactions' round trips take
        turns, as under real contention, instead of one transaction running to its end (a
        serial schedule, where no isolation anomaly can show). Any order stays possible."""
        last = self.last_round_trip
        return min(ready, key=lambda index: last.get(self.scheduler.clients[index].name, -1))

    def before_step(self, index: int) -> None:
        if self.scheduler.clients[index].status is Status.SLEEPING:
            return  # it wakes and runs up to its next round trip, which it does not send yet
        if self.record is not None:
            started = time.perf_counter()
            if self.table.asked != self._asked:  # the table asked the server (COMMAND GETKEYS)
                self._asked, self._boundary = self.table.asked, ""
            self._begin = (self._boundary or self.record.mark(), index, len(self.scheduler.trace))
            self.record_seconds += time.perf_counter() - started

    def _after_progress(self, index: int) -> None:
        if self.record is not None and self._begin is not None:
            started = time.perf_counter()
            begin, client, before = self._begin
            self._begin = None
            end = self._last_mark = self._boundary = self.record.mark()
            name = self.scheduler.clients[client].name
            for entry in self.scheduler.trace[before:]:
                if entry.client == name and entry.sent:
                    self._marks[entry.index] = (begin, end)
            self.record_seconds += time.perf_counter() - started
        super()._after_progress(index)

    def _note_expiries(self, seconds: float) -> None:
        super()._note_expiries(seconds)
        self._boundary = ""  # the harness read TTLs: the next round trip's part begins after them

    def _collect(self) -> None:
        """Sort the trace's new round trips to the operations that sent them."""
        trace = self.scheduler.trace
        names = {c.name: c.index for c in self.scheduler.clients}
        for entry in trace[self.seen :]:
            if entry.sent:
                self.last_round_trip[entry.client] = entry.index
            op = self.running.get(names.get(entry.client, -1))
            if entry.sent and op is not None:
                self.steps.append((op.name, entry))
        self.seen = len(trace)

    def _read_record(self) -> None:
        """What the server ran for each round trip marked so far."""
        if self.record is None or not self._last_mark:
            return
        started = time.perf_counter()
        mark, self._last_mark = self._last_mark, ""
        entries = self.record.read_through(mark)
        starts = {begin: index for index, (begin, _) in self._marks.items()}
        # The marker read last may begin a round trip made since (one marker ends a round trip and
        # begins the next): what follows it in this read is that round trip's.
        index = starts.pop(self._read_at, None)
        if index is not None:
            self._ran[index] = []
        self._read_at = mark
        for entry in entries:
            if isinstance(entry, str):
                index = starts.pop(entry, None)
                if index is not None:
                    self._ran[index] = []
            elif index is not None:
                self._ran[index].append(entry)
        self._marks = {i: m for i, m in self._marks.items() if i not in self._ran}
        self.record_seconds += time.perf_counter() - started

    def round_trips(self) -> list[RoundTrip]:
        """The example's round trips so far, in the server's order, each with what the server ran."""
        self._read_record()
        out = []
        for op, entry in self.steps:
            ran = self._ran.get(entry.index)
            executed = None if ran is None else [Executed(r.args, r.by_script) for r in ran]
            if self.record is not None and ran is None:
                executed = None  # marked but never read (the record broke): the trace stands in
            out.append(RoundTrip(op, entry.index, entry.sent, entry.replies, bool(entry.lost), executed))
        return out

    def after_step(self) -> None:
        self._collect()

    def crashed(self, index: int) -> None:
        self._collect()
        if (op := self.running.pop(index, None)) is not None:
            op.status, op.crashed = "maybe", True

    def completed(self, index: int) -> None:
        self._collect()
        op = self.running.pop(index, None)
        if op is None:
            return
        outcome = self.scheduler.clients[index].outcome
        if outcome.error is not None:
            op.status = "maybe"  # lost reply, or gave up: applied once or not at all
        else:
            op.status, op.value = "ok", outcome.value
        self.check_graph()
        if op.move is None and op.status == "ok" and CONSISTENT_AUDIT in self.claims:
            transfers = {o.name for o in self.operations if o.move is not None}
            if op.beside & transfers:
                self.met[CONSISTENT_AUDIT] += 1
            seen = {str(k): int(v) for k, v in dict(op.value).items()}
            if (problem := explain_audit(dict.fromkeys(ACCOUNTS, OPENING), seen)) and not self.broken_audit:
                # Reported once the operations in flight have ended, unless the graph has a cycle
                # by then (a transfer half seen that goes on to finish is read skew): a broken sum
                # stands alone only where no cycle explains it.
                self.broken_audit = f"{op.label}: {problem}"

    def check_graph(self) -> Judgement | None:
        """Judge the conflict graph of the example so far (SERIALIZABLE); the judgement, if made."""
        if SERIALIZABLE not in self.claims:
            return None
        started = time.perf_counter()
        no_reads = {op.name for op in self.operations if op.status in ("maybe", "running")}
        trips = self.round_trips()
        judged = judge(
            trips,
            self.table,
            is_data=self.data_keys.__contains__,
            no_reads=no_reads,
            label=self.label,
            scripts_shown=self.record is not None and self.record.shows_scripts,
            debits={
                op.name: {k for k, accounts in self.data_keys.items() if op.move[0] in accounts}
                for op in self.operations
                if op.move is not None
            },
        )
        self.graph_seconds += time.perf_counter() - started
        if judged.cycle is not None:
            cycle = judged.cycle
            ops = {o.name: o.label for o in self.operations}
            involved = sorted({e.src for e in cycle.edges}, key=lambda n: int(n[1:]))
            self.fail(
                SERIALIZABLE,
                f"{cycle.describe()}; the operations: " + ", ".join(ops[n] for n in involved),
            )
        self._unplaced = judged.unplaced
        if any(op.beside for op in self.operations):
            self.met[SERIALIZABLE] += 1
        return judged

    def _crash_named(self, judged: Judgement | None, problem: str) -> str:
        """A broken sum, named a money-moving crash when a transfer of unknown outcome wrote one of
        its accounts and not the other (as the server's record shows)."""
        for op in self.operations:
            if op.move is None or op.status != "maybe":
                continue
            src, dst, _ = op.move
            wrote = self._written_in(op.name)
            held = {k for k, accounts in self.data_keys.items() if accounts & {src, dst}}
            src_keys = {k for k, a in self.data_keys.items() if src in a}
            dst_keys = {k for k, a in self.data_keys.items() if dst in a}
            if src_keys & dst_keys or not wrote & held:
                continue
            if bool(wrote & src_keys) != bool(wrote & dst_keys):
                how = "crashed" if op.crashed else "lost a reply and raised"
                done, undone = (src, dst) if wrote & src_keys else (dst, src)
                return (
                    f"money-moving crash: {op.label} {how} after the server ran its write to "
                    f"{done} and before any to {undone}; {problem}"
                )
        return problem

    def _written_in(self, op_name: str) -> set[str]:
        own = [t for t in self.round_trips() if t.op == op_name]
        if not own:
            return set()
        return {
            a.key
            for a in op_accesses(
                own,
                self.table,
                is_data=self.data_keys.__contains__,
                scripts_shown=self.record is not None and self.record.shows_scripts,
            )
            if a.writes
        }

    def check_quiescent(self) -> None:
        judged = self.check_graph()
        if self.broken_audit:
            self.fail(CONSISTENT_AUDIT, self._crash_named(judged, self.broken_audit))
        if APPLIES_ONCE not in self.claims:
            return
        reader = self.harness_object(lambda conn: type(self).factory(conn, self.ns.prefix))
        final = {str(k): int(v) for k, v in dict(reader.balances(list(ACCOUNTS))).items()}
        done = [o.move for o in self.operations if o.move and o.status == "ok" and o.value]
        maybe = [o.move for o in self.operations if o.move and o.status in ("maybe", "running")]
        if problem := explain_final(dict.fromkeys(ACCOUNTS, OPENING), done, maybe, final):
            self.fail(APPLIES_ONCE, self._crash_named(judged, problem))
        if maybe:
            self.met[APPLIES_ONCE] += 1

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            if self._unplaced and not self.failed and self.unjudged is not None:
                for found in self._unplaced:
                    touched = ", ".join(sorted({self.label(k) for k in found.keys}))
                    self.unjudged.setdefault(
                        found.command, f"{found.command} {found.why} (it touched {touched})"
                    )
            if self.record is not None:
                self.record.close()


def machine_for(impl: Any) -> type[TransactionMachine]:
    return type(
        f"TransactionMachine_{''.join(c if c.isalnum() else '_' for c in impl.name)}",
        (TransactionMachine,),
        {"factory": staticmethod(impl.factory), "claims": frozenset(impl.claims)},
    )
