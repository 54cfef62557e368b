"""Critical sections for the lock machine: holders that hold a while, and a protected resource.

Once granted, a holder runs a critical section before the lock machine lets it extend and
release: it may hold the lock for as long as Hypothesis keeps it there (`hold` at acquire;
the `proceed` rule lets it go on), and with a `Fence` it takes a fencing token and writes to
a protected resource on a server of its own. Then the property is the resource's:

* no-stale-write: the resource never goes back to an older holder's value. Holders are
  admitted in the order they took their token (without tokens, the order of their grants);
  after the resource has taken the write of a holder admitted later, it must not take one
  from a holder admitted earlier. The harness judges by what the resource holds, read after
  each write, not by what the writer was told, and not by token values.

What the lock itself guarantees is not judged in this mode (two holders at once are counted,
not failed): fencing keeps the resource in order, it does not give mutual exclusion back. Both
holders still run their sections at the same time; only effects that go through the resource
with the token are ordered (a read-modify-write whose read is not fenced can still lose an
update, and a side effect elsewhere is not protected at all).

Where the token comes from (Redlock hands out none). `resource`: INCR on a counter kept by the
resource's own server, right after the grant, as Kleppmann prescribes when the lock has none.
One server keeps it, so it only grows; but it orders holders by when they reached it, not by
when the lock granted them: with two holders at once, the later grant may get the smaller
token, and then the earlier holder's write is the one kept. The resource stays in token order;
which holder "should" win, Redlock cannot say. Nothing on the masters would do: a counter on
one master starts again at 1 when it restarts empty (`master` shows it), and the largest of
per-master counters over a quorum is not monotonic even without restarts, since counters on
different masters are not comparable (grants on masters {1,2,3}, {3,4,5}, {1,2,3}, {1,2,4}
get maxima 1, 2, 3, 3).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import redis
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.impl.locks.errors import StaleFencingTokenError
from contend.impl.locks.fenced import FencedResource
from contend.machines.locks import LockMachine
from contend.servers.target import Target

NO_STALE_WRITE = "no-stale-write"


@dataclass(frozen=True)
class Fence:
    """Where a holder's fencing token comes from (None: it writes without one), and whether the
    resource compares tokens."""

    name: str
    tokens: str | None  # "resource": INCR on the resource's server; "master": INCR on master 1
    checks: bool
    about: str
    known_bad: bool = False


FENCES = {
    f.name: f
    for f in (
        Fence("none", None, False, "no fencing token: each holder writes the resource plainly"),
        Fence(
            "resource",
            "resource",
            True,
            "a token from INCR on a counter kept by the resource's own server, taken right after "
            "the grant; the resource refuses a token below the highest it took (FencedResource)",
        ),
        Fence(
            "unchecked",
            "resource",
            False,
            "tokens as with 'resource', but the resource stores them without comparing (known bad)",
            known_bad=True,
        ),
        Fence(
            "master",
            "master",
            True,
            "a token from INCR on a counter on Redlock's master 1, checked by the resource; the master "
            "has no persistence, so a restart starts the counter again (known bad: not monotonic)",
            known_bad=True,
        ),
    )
}


class UncheckedResource:
    """Known bad: takes a fencing token with every write and stores it, but never compares it."""

    def __init__(self, client: redis.Redis, key: str) -> None:
        self.client = client
        self.key = key

    def write(self, token: int, value: str) -> None:
        """Store `value` whatever `token` is (one HSET)."""
        self.client.hset(self.key, mapping={"token": token, "value": value})


#: Idle connections to resource servers, per URL: an example takes them instead of connecting anew.
_idle: dict[str, list[redis.Redis]] = {}


def _connection(url: str) -> redis.Redis:
    idle = _idle.setdefault(url, [])
    if idle:
        return idle.pop()
    conn = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)
    conn.ping()  # connect outside the schedule: the handshake is no step
    return conn


class CriticalSections(LockMachine):
    """A LockMachine whose holders run a critical section between their grant and their
    extend/release: [fencing token] [hold until `proceed`] [protected write], each part only
    when asked for. Subclasses set `fence` (None: holding only) and `resource_url`."""

    fence: Fence | None = None
    resource_url = ""
    #: Per search, added up over examples: how often two holders overlapped, and what the
    #: resource did then (see `teardown`). The factory gives each machine class its own.
    stats: ClassVar[Counter[str]] = Counter()

    def __init__(self, target: Target, **kwargs: Any) -> None:
        self.hold_wanted: set[int] = set()  # clients that hold until `proceed` once granted
        self.held: set[int] = set()  # holders inside their critical section, waiting for `proceed`
        self.section: dict[int, list[str]] = {}  # holder -> the parts of its section still to run
        self.after_section: dict[int, tuple[Callable[[], Any], str]] = {}  # what comes after it
        self.grants = 0
        self.grant_of: dict[int, int] = {}  # holder -> number of its grant (1, 2, ...)
        self.admitted = 0
        self.admission: dict[int, int] = {}  # holder -> its admission (token taken, or grant)
        self.token_of: dict[int, int] = {}
        self.highest_admission = 0  # of the writes the resource holds so far
        self.last_writer = ""
        self.overlaps: list[tuple[int, int]] = []  # (older grant, newer grant) valid at once
        self.landed: set[int] = set()  # grants whose write the resource took
        self.refused: set[int] = set()  # grants whose write it refused
        self._blind = False
        super().__init__(target, **kwargs)

    def setup_clients(self) -> None:
        super().setup_clients()
        self.resource_key = self.ns.key("resource")
        self.counter_key = self.ns.key("resource", "fence")
        self.resource_admin: redis.Redis | None = None
        self.resource_conns: list[redis.Redis] = []
        if self.fence is None:
            return
        self.resource_admin = _connection(self.resource_url)
        self.resource_conns = [_connection(self.resource_url) for _ in range(self.workers)]
        kind = FencedResource if self.fence.checks else UncheckedResource
        self.resources = [kind(conn, self.resource_key) for conn in self.resource_conns]

    # The section ----------------------------------------------------------------------
    def idle_workers(self) -> list[int]:
        return [i for i in super().idle_workers() if i not in self.held]

    def valid_holders(self) -> set[int]:
        # LockMachine.acquired fails a grant made while another lease is valid, whatever the
        # claims: with a fence, that check is made blind (the overlap is counted instead).
        return set() if self._blind else super().valid_holders()

    def acquired(self, index: int, value: Any) -> None:
        """The lock machine's judgement of a grant, then the holder's section is planned. With a
        fence, two holders at once are counted, not failed: the property is the resource's."""
        self.grants += 1
        self.grant_of[index] = self.grants
        if self.fence is not None:
            for other in sorted(super().valid_holders() - {index}):
                self.overlaps.append((self.grant_of[other], self.grants))
                names = [c.name for c in self.scheduler.clients]
                self.scheduler.note(
                    f"{names[index]} acquired while {names[other]} holds a valid lease: two holders "
                    "(counted, not judged here)"
                )
            self._blind = True
        try:
            super().acquired(index, value)
        finally:
            self._blind = False
        parts = []
        if self.fence is not None and self.fence.tokens is not None:
            parts.append("token")
        elif self.fence is not None:
            self.admit(index)
        if index in self.hold_wanted:
            self.hold_wanted.discard(index)
            parts.append("hold")
        if self.fence is not None:
            parts.append("write")
        if parts:
            self.section[index] = parts

    def admit(self, index: int) -> None:
        self.admitted += 1
        self.admission[index] = self.admitted

    def start(self, index: int, operation: Callable[[], Any], label: str) -> None:
        """The lock machine starting a holder's extend or release runs its section first."""
        if index in self.section and index not in self.after_section:
            self.after_section[index] = (operation, label)
            self.giving_back.pop(index, None)  # set again when the extend/release starts
            self.next_part(index)
            return
        super().start(index, operation, label)

    def next_part(self, index: int) -> None:
        """Start the next part of holder `index`'s section, or, when it is done, what comes after."""
        parts = self.section.get(index)
        name = self.scheduler.clients[index].name
        if not parts:
            self.section.pop(index, None)
            operation, label = self.after_section.pop(index)
            self.giving_back[index] = len(self.scheduler.trace)  # stall_inside counts from here
            super().start(index, operation, label)
            return
        part = parts.pop(0)
        if part == "hold":
            self.held.add(index)
            self.scheduler.note(f"{name} holds the lock, inside its critical section")
        elif part == "token":
            on_resource = self.fence is not None and self.fence.tokens == "resource"
            client = self.resource_conns[index] if on_resource else self.connections[index]  # or master 1
            key = self.counter_key
            super().start(index, lambda: int(client.incr(key)), "token()")
        else:
            resource = self.resources[index]
            token = self.token_of.get(index, 0)
            value = f"{name}#{self.admission[index]}"
            super().start(index, lambda: resource.write(token, value), f"write({value})")

    @precondition(lambda self: bool(self.held))
    @rule(client=st.integers(0, 3))
    def proceed(self, client: int) -> None:
        """A holder that was working inside its critical section goes on."""
        held = sorted(self.held)
        index = held[client % len(held)]
        self.held.discard(index)
        self.next_part(index)

    def completed(self, index: int) -> None:
        operation = self.scheduler.clients[index].operation
        if operation == "token()":
            outcome = self.scheduler.clients[index].outcome
            if outcome.error is None:
                self.admit(index)
                self.token_of[index] = int(outcome.value)
            else:  # no token (master 1 cut off): no write either
                self.section[index] = [p for p in self.section[index] if p != "write"]
            self.next_part(index)
        elif operation.startswith("write("):
            self.judge_write(index)
            self.next_part(index)
        else:
            super().completed(index)

    def crashed(self, index: int) -> None:
        super().crashed(index)
        self.section.pop(index, None)
        self.after_section.pop(index, None)
        self.held.discard(index)
        self.hold_wanted.discard(index)

    # The resource's property ----------------------------------------------------------
    def judge_write(self, index: int) -> None:
        """no-stale-write: read what the resource holds now; it must not be from a holder
        admitted before the one whose write it held before."""
        assert self.resource_admin is not None
        error = self.scheduler.clients[index].outcome.error
        grant = self.grant_of[index]
        if error is None:
            self.landed.add(grant)
        elif isinstance(error, StaleFencingTokenError):
            self.refused.add(grant)
        raw = self.resource_admin.hget(self.resource_key, "value")
        if raw is None:
            return
        holder = raw.decode() if isinstance(raw, bytes) else str(raw)
        admission = int(holder.rsplit("#", 1)[1])
        if admission < self.highest_admission:
            self.fail(NO_STALE_WRITE, self._stale_detail(index, holder))
        self.highest_admission = admission
        self.last_writer = holder

    def _stale_detail(self, index: int, holder: str) -> str:
        assert self.fence is not None
        how = "took its token" if self.fence.tokens else "was granted"
        mine = self.token_of.get(index)
        token = f", token {mine}" if mine is not None else ""
        lease = (
            "its lease had run out (a stall or pauses passed its TTL)"
            if self.surely_expired(index)
            else "its lease still valid: two holders at once"
        )
        return (
            f"the resource took {holder}'s write over {self.last_writer}'s: a holder admitted earlier "
            f"(#{self.admission[index]}, when it {how}{token}) overwrote the write of one admitted later "
            f"(#{self.highest_admission}); {lease}. Fence {self.fence.name!r}: {self.fence.about}"
        )

    # The end ------------------------------------------------------------------------------
    def finish_all(self, max_steps: int = 5_000) -> None:
        """Every client to the end of its operation, holders through the rest of their section."""
        super().finish_all(max_steps)
        while self.held:
            for index in sorted(self.held):
                self.held.discard(index)
                self.next_part(index)
            super().finish_all(max_steps)

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            self._count()
            if self.resource_admin is not None:
                self.resource_admin.delete(self.resource_key, self.counter_key)
                _idle.setdefault(self.resource_url, []).extend([*self.resource_conns, self.resource_admin])

    def _count(self) -> None:
        """Add this example to the search's `stats`."""
        stats = type(self).stats
        stats["examples"] += 1
        if not self.overlaps:
            return
        stats["two holders"] += 1
        if any(a in self.refused or b in self.refused for a, b in self.overlaps):
            stats["two holders, a write refused"] += 1
        if any(a in self.landed and b in self.landed for a, b in self.overlaps):
            stats["two holders, both writes taken"] += 1
