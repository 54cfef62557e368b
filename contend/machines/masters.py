"""The lock machine over independent masters: a Redlock, contend's or the user's own
(`contend check --masters N`), with the faults a deployment of several masters has.

The lock machine's rules and properties (contend.machines.locks, with holders that may hold a
while: contend.machines.fencing) run on a lock whose factory spans the masters, plus:

* `cut_off` - a network partition: one client can no longer reach a minority of the masters
  (round trips there fail before they are sent), for the rest of the example;
* `pause_master` - one master stops answering every client for half a TTL of virtual time
  (their round trips there time out), then answers again with its keys as they were;
* `restart_master` - while a client holds the lock, one master dies and comes back empty
  (no persistence). As Redlock requires of a master that restarts without its data, it stays
  down for longer than the longest lease first (the TTL, or an extend's once one was asked
  for; every client's round trips there fail meanwhile), so no lease it held can still be
  valid when it answers again. `restart_at_once` drops that delay:
  Kleppmann's counterexample, which breaks Redlock as published (`contend.machines.redlock`).

A lost reply (drawn by every machine) lands on whichever master the round trip goes to. At most
one master is paused or down at a time, and every master answers again before the judgements
made when nothing is in flight (crash liveness).
"""

from __future__ import annotations

from collections import Counter
from typing import Any
from urllib.parse import urlsplit

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.machines.connections import forget_connections
from contend.machines.fencing import CriticalSections
from contend.machines.locks import LockMachine
from contend.schedule.gating import DOWN, PARTITION, PAUSED
from contend.servers.server import EmbeddedRedis
from contend.servers.target import Target

#: Stalls after a grant and inside an extend or release: one draw in this many (the one-server lock
#: machine's weights changed for its own hunt; these searches keep theirs).
_RARELY = 6


def node_of_url(url: str) -> str:
    """host:port of the server a redis:// URL names, as the gate names a connection's server."""
    parts = urlsplit(url)
    return f"{parts.hostname or '127.0.0.1'}:{parts.port or 6379}"


class MastersMachine(CriticalSections):
    """Subclass with `factory` (the one-server protocol over the masters) and `claims` set; the
    masters are the target's server and its `also`, their processes the target's deployment's
    (or `servers`), needed by `restart_master` only."""

    servers: list[EmbeddedRedis] | None = None
    restart_at_once = False

    def __init__(self, target: Target, **kwargs: Any) -> None:
        self.master_urls = [target.url, *target.also]
        self.master_nodes = [node_of_url(url) for url in self.master_urls]
        if self.servers is None:
            deployment = target.deployment
            owned = list(deployment.lock_masters) if deployment is not None else []
            self.servers = owned if len(owned) == len(self.master_urls) else []
        self.away: dict[int, tuple[str, float]] = {}  # master -> (PAUSED or DOWN, virtual time it is back)
        self.restarted = False
        super().__init__(target, **kwargs)

    @property
    def minority(self) -> int:
        return (len(self.master_nodes) - 1) // 2

    def master_name(self, k: int) -> str:
        return f"master {k + 1} ({self.master_nodes[k]})"

    # Rules -------------------------------------------------------------------------------
    @precondition(lambda self: bool(self.idle_workers()))
    @rule(
        client=st.integers(0, 3),
        stall=st.sampled_from([False] * (_RARELY - 1) + [True]),
        stall_inside=st.sampled_from([None] * (_RARELY - 1) + [1, 2]),
        crash_after=st.one_of(st.none(), st.none(), st.none(), st.integers(1, 10)),
        extend=st.booleans(),
        hold=st.booleans(),
        # An acquire is a round trip (or more) per master: a pause anywhere in it, one time in four.
        pause_in_acquire=st.one_of(st.none(), st.none(), st.none(), st.integers(1, 8)),
    )
    def acquire(
        self,
        client: int,
        stall: bool,
        stall_inside: int | None,
        crash_after: int | None,
        extend: bool,
        hold: bool = False,
        pause_in_acquire: int | None = None,
    ) -> None:
        """The lock machine's acquire; with `hold`, the holder then stays inside its critical
        section (holding the lock) until Hypothesis draws `proceed` for it. A crash comes one
        time in four, after up to two rounds of the masters' round trips; a pause longer than the
        TTL as often, after any of its first 8 round trips (a majority's copies may run out)."""
        idle = self.idle_workers()
        index = idle[client % len(idle)]  # the client LockMachine.acquire picks
        if hold:
            self.hold_wanted.add(index)
        else:
            self.hold_wanted.discard(index)
        LockMachine.acquire(self, client, stall, stall_inside, crash_after, extend, pause_in_acquire)

    @precondition(lambda self: not any(PARTITION in c.unreachable.values() for c in self.scheduler.clients))
    @rule(client=st.integers(0, 3), first=st.integers(0, 8))
    def cut_off(self, client: int, first: int) -> None:
        """A network partition: one client can no longer reach a minority of the masters (from
        master `first` on), for the rest of the example."""
        index = client % self.workers
        n = len(self.master_nodes)
        cut = [(first + k) % n for k in range(self.minority)]
        self.scheduler.clients[index].unreachable.update({self.master_nodes[k]: PARTITION for k in cut})
        names = ", ".join(self.master_name(k) for k in cut)
        self.scheduler.note(f"{self.scheduler.clients[index].name} is cut off from {names}")

    @precondition(lambda self: not self.away and self.busy_workers())
    @rule(which=st.integers(0, 8))
    def pause_master(self, which: int) -> None:
        """One master stops answering (a stalled process or host) for half a TTL of virtual time."""
        k = which % len(self.master_nodes)
        self._away(k, PAUSED, self.ttl / 2)
        self.scheduler.note(
            f"{self.master_name(k)} is paused for {self.ttl / 2:g} s: round trips there time out"
        )

    @precondition(
        lambda self: bool(self.servers) and bool(self.believers) and not self.restarted and not self.away
    )
    @rule(which=st.integers(0, 8))
    def restart_master(self, which: int) -> None:
        """While a client holds the lock, one master is killed (SIGKILL) and comes back empty,
        after staying down for longer than the longest lease asked for (unless `restart_at_once`).
        Once per example."""
        assert self.servers
        k = which % len(self.servers)
        server = self.servers[k]
        server.kill()
        server.start()  # on the same port, empty; unreachable to the clients while it is "down"
        self.restarted = True
        type(self).stats["restarts"] += 1  # the search's count: a fault that took effect
        if self.restart_at_once:
            self.scheduler.note(f"{self.master_name(k)} restarted empty (no persistence)")
            return
        # Longer than any lease a key there may carry: an extend's, once a client asked for one.
        down = self.longest_lease + self.past
        self._away(k, DOWN, down)
        self.scheduler.note(
            f"{self.master_name(k)} died; it comes back empty (no persistence) after {down:g} s, "
            "longer than the longest lease asked for"
        )

    def _away(self, k: int, why: str, seconds: float) -> None:
        self.away[k] = (why, self.scheduler.vclock + seconds)
        for client in self.scheduler.clients:
            client.unreachable.setdefault(self.master_nodes[k], why)

    def _back(self, k: int) -> None:
        why, _ = self.away.pop(k)
        node = self.master_nodes[k]
        for client in self.scheduler.clients:
            if client.unreachable.get(node) == why:
                del client.unreachable[node]
        self.scheduler.note(f"{self.master_name(k)} answers again" + (" (empty)" if why == DOWN else ""))

    def after_step(self) -> None:
        for k, (_, until) in list(self.away.items()):
            if self.scheduler.vclock >= until:
                self._back(k)
        super().after_step()

    def check_quiescent(self) -> None:
        for k in list(self.away):
            self._back(k)
        super().check_quiescent()

    def teardown(self) -> None:
        try:
            super().teardown()
        finally:
            if self.restarted:
                # Connections kept for later examples (and the clients of the other masters made
                # for them) knew the master that died: later examples start from new ones, as the
                # same example replayed would.
                forget_connections(self.target)


def masters_machine(impl: Any) -> type[MastersMachine]:
    """The masters machine for a subject spanning masters (`impl.factory` already the one-server
    protocol over them: contend.subject.multi_master.over_masters)."""
    return type(
        f"MastersMachine_{''.join(c if c.isalnum() else '_' for c in impl.name)}",
        (MastersMachine,),
        {"factory": staticmethod(impl.factory), "claims": frozenset(impl.claims), "stats": Counter()},
    )
