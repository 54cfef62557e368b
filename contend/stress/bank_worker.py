"""The transaction workload's worker: transfers between three accounts and audits of them.

Each worker moves money between the accounts the parent opened (`ACCOUNTS`,
`OPENING` each) and audits all of them, one operation at a time, recorded as
every stress operation is (invoke, then ok, fail or info). What the server ran
for each operation is told apart in the server's MONITOR stream
(`contend.stress.attribution`) by two kinds of marker this worker sends:

* every connection its client opens first sends `ECHO contend-conn:<process>`
  (redis-py's `redis_connect_func`): the stream shows each command with the
  address of the connection that sent it, so the address names the process;
* every operation first sends `ECHO contend-op:<process>:<n>` (the process's
  n-th operation, from 0). A process runs one operation at a time and waits
  for each reply, so what its connections ran after that marker and before
  the next belongs to operation n.

After an operation ends in info (its outcome unknown) the worker goes on as a
new process (Jepsen's rule) with a new client: whatever the old connections'
commands still do in the server belongs to the operation that ended in info.
Neither marker counts as a round trip of the operation (a transfer whose
marker alone reached the server cannot have taken effect: it is a fail).
"""

from __future__ import annotations

import contextlib
from typing import Any

import redis

from contend.impl.transactions.bank import RetriesExhausted, TransferError
from contend.servers.tap import tap
from contend.stress.board import Field, WorkerPhase
from contend.stress.workers import Worker, connect

#: The accounts every run opens, each with OPENING; transfers move AMOUNTS (the whole opening
#: balance among them, so two transfers from one account may overdraw it), as the transaction
#: machine does.
ACCOUNTS = ("a", "b", "c")
OPENING = 10
AMOUNTS = (3, 10)
#: One operation in AUDIT_SHARE is an audit of every account; the others are transfers.
AUDIT_SHARE = 1 / 3

#: Marker prefixes in the server's MONITOR stream.
CONN_PREFIX = "contend-conn:"
OP_PREFIX = "contend-op:"
OPEN_PREFIX = "contend-open:"
#: What the harness's probe script echoes (is it shown as run by `lua`?).
SCRIPT_PROBE = "contend-probe:scripts"


def conn_marker(process: int) -> str:
    return f"{CONN_PREFIX}{process}"


def op_marker(process: int, n: int) -> str:
    return f"{OP_PREFIX}{process}:{n}"


class TransactionWorker(Worker):
    """transfer / balances on the run's accounts, each operation marked in the server's stream."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.ops = 0  # operations invoked by the current process (the next marker's n)
        self._named = False  # the client's connections name the process (built in _renew)
        super().__init__(*args, **kwargs)
        # Catalog banks: bad input and a transfer that gave up before writing raise these.
        self.definite = (TransferError, RetriesExhausted) if self.spec.kind is None else ()
        self._renew()

    def _renew(self) -> None:
        """A client whose connections name this process (the one Worker made named none)."""
        with contextlib.suppress(Exception):
            self.client.close()
        self.client = connect(self.board.url, self.spec.op_timeout)
        self.client.connection_pool.connection_kwargs["redis_connect_func"] = self._on_connect
        self.trips = tap(self.client)
        self.ops = 0
        self._named = True
        self.setup()

    def _on_connect(self, conn: Any) -> None:
        """A new connection says which process it belongs to before it sends anything else."""
        sent = self.trips.sent
        try:
            conn.on_connect()
            conn.send_command("ECHO", conn_marker(self.process))
            conn.read_response()
        finally:
            self.trips.sent = sent  # a marker is no round trip of the operation

    def setup(self) -> None:
        if self._named:  # not on the unnamed client Worker.__init__ made
            self.bank = self.factory(self.client, self.spec.namespace)

    def follow_server(self) -> None:
        if self.board.generation != self.generation:
            self.generation = self.board.generation
            self._renew()

    def _mark(self) -> None:
        """The operation's marker: the process's n-th operation is n whether or not its marker
        reached the server (the history counts every invocation)."""
        n, self.ops = self.ops, self.ops + 1
        sent = self.trips.sent
        try:
            self.client.echo(op_marker(self.process, n))
        finally:
            self.trips.sent = sent

    def step(self) -> None:
        self.board.set(self.index, Field.PHASE, WorkerPhase.BUSY)
        process = self.process
        if self.rng.random() < AUDIT_SHARE:
            accounts = list(ACCOUNTS)

            def audit() -> dict[str, int]:
                self._mark()
                return {str(k): int(v) for k, v in dict(self.bank.balances(accounts)).items()}

            self.op("balances", None, accounts, audit)
        else:
            src = self.rng.choice(ACCOUNTS)
            dst = self.rng.choice([a for a in ACCOUNTS if a != src])
            amount = self.rng.choice(AMOUNTS)

            def transfer() -> bool:
                self._mark()
                return bool(self.bank.transfer(src, dst, amount))

            self.op("transfer", None, [src, dst, amount], transfer)
        if self.process != process:  # an info: go on as the new process, on connections of its own
            self._renew()
        self.board.set(self.index, Field.PHASE, WorkerPhase.IDLE)

    def close(self) -> None:
        closer = getattr(getattr(self, "bank", None), "close", None)
        if callable(closer):
            with contextlib.suppress(Exception):
                closer()
        super().close()


def open_accounts(client: redis.Redis, factory: Any, namespace: str) -> None:
    """The harness opens every account (before any worker starts), each between markers in the
    server's stream: what the server ran between them names the account's keys. A probe script
    first shows whether the server shows the commands scripts run."""
    client.eval("return redis.call('ECHO', ARGV[1])", 0, SCRIPT_PROBE)
    bank = factory(client, namespace)
    for account in ACCOUNTS:
        client.echo(f"{OPEN_PREFIX}{account}")
        bank.open(account, OPENING)
    client.echo(f"{OPEN_PREFIX}")
