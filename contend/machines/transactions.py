"""The transaction machine: clients move money between three accounts and audit them.

Hypothesis draws transfers (a source, a destination, an amount that may
overdraw it) and audits of every account, and interleaves their round trips.
After each operation ends, the conflict graph of the example so far
(`contend.history.isolation`, built from the order the server ran the round
trips) must have no cycle; the model (`contend.models.bank`) judges the rest:

* serializable: no cycle in the conflict graph (named G0, G1c, lost update,
  G-single, G2-item, with its edges: `T3 -rw(acct:a)-> T5 -ww(acct:b)-> T3`);
* consistent-audit: an audit of every account sees the opening total, no
  account below zero (a state some serial order produces);
* applies-once: when nothing is in flight, the balances are the opening ones
  plus each completed transfer once and each of unknown outcome (its reply
  lost, its client crashed) once or not at all; money is conserved and no
  account is below zero.

An operation that lost a reply and raised is indeterminate (Jepsen's `info`):
its reads are no evidence and its transfer may or may not have applied.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.history.isolation import RoundTrip, check_serializable
from contend.impl.catalog import APPLIES_ONCE, CONSISTENT_AUDIT, SERIALIZABLE
from contend.machines.base import ScheduledMachine
from contend.models.bank import Move, explain_audit, explain_final
from contend.servers.target import Target

ACCOUNTS = ("a", "b", "c")
OPENING = 10
#: Amounts a transfer moves: small ones, and the whole opening balance (two of those overdraw).
AMOUNTS = (3, 10)


@dataclass
class Operation:
    name: str  # T1, T2, ... in the order they started
    client: int
    label: str
    move: Move | None = None  # None: an audit
    status: str = "running"  # running, ok, raised, maybe (indeterminate or crashed)
    value: Any = None


class TransactionMachine(ScheduledMachine):
    factory: Any = None
    claims: frozenset[str] = frozenset({SERIALIZABLE, CONSISTENT_AUDIT, APPLIES_ONCE})
    anchor = ("bank",)
    essential_rules = frozenset({"begin", "advance"})  # swarm testing never turns them off

    def __init__(self, target: Target, **kwargs: Any) -> None:
        self.operations: list[Operation] = []
        self.running: dict[int, Operation] = {}  # client -> its operation in flight
        self.round_trips: list[RoundTrip] = []
        self.seen = 0  # trace entries already sorted into round_trips
        self.last_round_trip: dict[str, int] = {}  # client name -> trace position of its last one
        self.data_keys: set[str] = set()
        self.banks: list[Any] = []
        #: Seconds spent building and checking conflict graphs in this example.
        self.graph_seconds = 0.0
        super().__init__(target, **kwargs)

    def setup_clients(self) -> None:
        factory = type(self).factory
        opener = factory(self.admin, self.ns.prefix)
        before = set(self._namespace_keys())
        for account in ACCOUNTS:
            opener.open(account, OPENING)
        # The accounts are whatever `open` wrote: the data whose isolation is judged (a lock's or
        # a ledger's keys are the implementation's business).
        self.data_keys = set(self._namespace_keys()) - before
        self._known_keys.update(self.data_keys)
        self.banks = [factory(conn, self.ns.prefix) for conn in self.connections]

    def _namespace_keys(self) -> list[str]:
        return [
            k.decode() if isinstance(k, bytes) else k for k in self.admin.scan_iter(f"{self.ns.prefix}:*")
        ]

    def label(self, key: str) -> str:
        """A key as the evidence shows it: without the namespace and hash tags (acct:a)."""
        short = key.removeprefix(self.ns.prefix + ":")
        return re.sub(r"\{[^}]*\}:?", "", short) or short

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

    def _collect(self) -> None:
        """Sort the trace's new round trips to the operations that sent them."""
        trace = self.scheduler.trace
        names = {c.name: c.index for c in self.scheduler.clients}
        for entry in trace[self.seen :]:
            if entry.sent:
                self.last_round_trip[entry.client] = entry.index
            op = self.running.get(names.get(entry.client, -1))
            if entry.sent and op is not None:
                self.round_trips.append(
                    RoundTrip(op.name, entry.index, entry.sent, entry.replies, lost=bool(entry.lost))
                )
        self.seen = len(trace)

    def after_step(self) -> None:
        self._collect()

    def crashed(self, index: int) -> None:
        self._collect()
        if (op := self.running.pop(index, None)) is not None:
            op.status = "maybe"

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
            seen = {str(k): int(v) for k, v in dict(op.value).items()}
            if problem := explain_audit(dict.fromkeys(ACCOUNTS, OPENING), seen):
                self.fail(CONSISTENT_AUDIT, f"{op.label}: {problem}")

    def check_graph(self) -> None:
        if SERIALIZABLE not in self.claims:
            return
        started = time.perf_counter()
        no_reads = {op.name for op in self.operations if op.status in ("maybe", "running")}
        cycle = check_serializable(
            self.round_trips, is_data=self.data_keys.__contains__, no_reads=no_reads, label=self.label
        )
        self.graph_seconds += time.perf_counter() - started
        if cycle is not None:
            ops = {o.name: o.label for o in self.operations}
            involved = sorted({e.src for e in cycle.edges}, key=lambda n: int(n[1:]))
            self.fail(
                SERIALIZABLE,
                f"{cycle.describe()}; the operations: " + ", ".join(ops[n] for n in involved),
            )

    def check_quiescent(self) -> None:
        self.check_graph()
        if APPLIES_ONCE not in self.claims:
            return
        reader = self.harness_object(lambda conn: type(self).factory(conn, self.ns.prefix))
        final = {str(k): int(v) for k, v in dict(reader.balances(list(ACCOUNTS))).items()}
        done = [o.move for o in self.operations if o.move and o.status == "ok" and o.value]
        maybe = [o.move for o in self.operations if o.move and o.status in ("maybe", "running")]
        if problem := explain_final(dict.fromkeys(ACCOUNTS, OPENING), done, maybe, final):
            self.fail(APPLIES_ONCE, problem)


def machine_for(impl: Any) -> type[TransactionMachine]:
    return type(
        f"TransactionMachine_{''.join(c if c.isalnum() else '_' for c in impl.name)}",
        (TransactionMachine,),
        {"factory": staticmethod(impl.factory), "claims": frozenset(impl.claims)},
    )
