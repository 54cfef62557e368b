"""What every scheduled machine shares: clients, the scheduler, and the rules about time.

Rules common to all families:

* `advance` - the scheduler lets one client perform one round trip. Hypothesis
  draws an index into the runnable clients, 0 meaning "keep the current one",
  so failing examples shrink towards fewer context switches.
* `crash` - a client abandons its operation mid-way (between two round trips);
  it never sends again and its connection is closed.
* `expire_leases` (lock families only) - a lease expires while its holder is
  paused: keys of the run namespace that carry a TTL are deleted at once, as
  Redis deletes them when a holder stalls longer than its TTL.

TTLs also run on the virtual clock: a key whose TTL has passed in virtual time
(retry loops sleep virtually) is deleted after the step, so a crashed holder's
lease ends when the survivors have waited long enough, not in real seconds.

On failure the machine notes the interleaving, client by client, with what
each round trip sent and received; Hypothesis prints it with the shrunk
example.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import redis
from hypothesis import note
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, precondition, rule

from contend.keyspace import Namespace
from contend.schedule import DrawChooser, Scheduler, Status
from contend.target import Target

#: Commands after which a key may carry a new TTL (scripts may do anything).
TTL_SETTERS = frozenset(
    {
        "SET", "SETEX", "PSETEX", "EXPIRE", "PEXPIRE", "EXPIREAT", "PEXPIREAT", "GETEX",
        "EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "RESTORE", "COPY", "RENAME",
        "RENAMENX", "EXEC",
    }
)  # fmt: skip


class PropertyViolated(AssertionError):
    """A family property broke; the message names it and the evidence."""


class ScheduledMachine(RuleBasedStateMachine):
    """Base: `clients` clients of one implementation under a Scheduler, in a fresh namespace."""

    clients = 3
    #: Databases besides the client's that the implementation writes to (for cleanup).
    dbs: tuple[int, ...] = ()
    #: Whether `expire_leases` may run: a lease expiring under a paused holder.
    explicit_expiry = False

    def __init__(self, target: Target) -> None:
        super().__init__()
        self.target = target
        self.admin = target.client()
        self.ns = Namespace(self.admin, dbs=self.dbs)
        self.scheduler = Scheduler()
        self.connections: list[redis.Redis] = []
        self.current: int | None = None
        self.in_flight: dict[int, str] = {}
        self._ttl_seen: dict[tuple[int, bytes], tuple[int, float]] = {}
        self._next_expiry = float("inf")
        for _ in range(self.clients):
            conn = target.client()
            conn.ping()  # connect before the run: the handshake is no step
            self.connections.append(conn)
            self.scheduler.add_client(connection=conn)
        self.setup_clients()

    # Subclasses --------------------------------------------------------------------
    def setup_clients(self) -> None:
        """Build the implementation's objects, one per client."""

    def completed(self, index: int) -> None:
        """Client `index` just finished an operation (its outcome is in the scheduler)."""

    def check_step(self) -> None:
        """Properties that must hold after every step."""

    def check_quiescent(self) -> None:
        """Properties that must hold when no operation is in flight."""

    # Helpers ------------------------------------------------------------------------
    def idle_clients(self) -> list[int]:
        return [c.index for c in self.scheduler.clients if c.status is Status.IDLE]

    def survivors(self) -> int:
        return sum(1 for c in self.scheduler.clients if c.status is not Status.CRASHED)

    def busy_clients(self) -> list[int]:
        return [c.index for c in self.scheduler.clients if c.status in (Status.READY, Status.SLEEPING)]

    def start(self, index: int, operation: Callable[[], Any], label: str) -> None:
        self.in_flight[index] = label
        self.scheduler.start(index, operation, label)
        self._after_progress(index)

    def fail(self, message: str) -> None:
        note("interleaving (step, client, what it sent → what came back):\n" + self.scheduler.format_trace())
        note(f"schedule for ReplayChooser: {self.scheduler.schedule}")
        raise PropertyViolated(message)

    def _after_progress(self, index: int) -> None:
        last = self.scheduler.trace[-1] if self.scheduler.trace else None
        sets_ttl = last is not None and any(cmd and cmd[0].upper() in TTL_SETTERS for cmd in last.sent)
        if sets_ttl or self.scheduler.vclock >= self._next_expiry:
            self._expire_by_virtual_time()
        client = self.scheduler.clients[index]
        if client.status is Status.IDLE and index in self.in_flight:
            del self.in_flight[index]
            self.completed(index)
        self.check_step()

    def _expire_by_virtual_time(self) -> None:
        """Delete keys whose TTL has run out on the virtual clock."""
        now = self.scheduler.vclock
        seen = {}
        for db, key in list(self.ns.keys()):
            client = self.ns._client_for(db)
            pttl = int(client.pttl(key))
            if pttl <= 0:
                continue
            last = self._ttl_seen.get((db, key))
            renewed = last is None or pttl > last[0] + 5  # new, re-set or extended
            expiry = now + pttl / 1000 if renewed or last is None else last[1]
            if now >= expiry:
                client.delete(key)
                self.scheduler.note(f"{key.decode(errors='replace')} expires: its TTL passed")
                continue
            seen[(db, key)] = (pttl, expiry)
        self._ttl_seen = seen
        self._next_expiry = min((expiry for _, expiry in seen.values()), default=float("inf"))

    # Rules -----------------------------------------------------------------------------
    @precondition(lambda self: bool(self.scheduler.runnable()))
    @rule(data=st.data())
    def advance(self, data: st.DataObject) -> None:
        self.current = DrawChooser(data)(self.current, self.scheduler.runnable())
        self.scheduler.step(self.current)
        self._after_progress(self.current)

    @precondition(lambda self: bool(self.busy_clients()) and self.survivors() > 1)
    @rule(data=st.data())
    def crash(self, data: st.DataObject) -> None:
        index = data.draw(st.sampled_from(self.busy_clients()), label="crashed client")
        self.scheduler.crash(index)
        self.in_flight.pop(index, None)
        self.crashed(index)

    def crashed(self, index: int) -> None:
        """Client `index` crashed mid-operation."""

    @precondition(lambda self: self.explicit_expiry)
    @rule()
    def expire_leases(self) -> None:
        expired = self.expire_all_ttls()
        if expired:
            self.scheduler.note(f"time passes: {expired} key(s) with a TTL expire")
            self.leases_expired()

    def leases_expired(self) -> None:
        """Every lease just expired."""

    def expire_all_ttls(self) -> int:
        """Delete every key of the namespace that has a TTL; how many there were."""
        count = 0
        for db, key in list(self.ns.keys()):
            client = self.ns._client_for(db)
            if int(client.pttl(key)) > 0:
                client.delete(key)
                count += 1
        return count

    # The end --------------------------------------------------------------------------
    def teardown(self) -> None:
        try:
            self.finish_all()
            self.check_quiescent()
        finally:
            self.scheduler.close()
            self.ns.cleanup()
            for conn in self.connections:
                conn.close()
            self.admin.close()

    def finish_all(self, max_steps: int = 5_000) -> None:
        """Run every client to the end of its operation, the current one first."""
        for _ in range(max_steps):
            ready = self.scheduler.runnable()
            if not ready:
                return
            if self.current not in ready:
                self.current = ready[0]
            self.scheduler.step(self.current)
            self._after_progress(self.current)
        self.fail(f"operations still running after {max_steps} steps: no progress (livelock or deadlock)")
