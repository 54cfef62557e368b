"""The lock machine's judgements of leases used after they ran out.

* safe-release: a release or extend by a client whose lease expired leaves a successor's lease as
  it was (the probe cannot take the lock right after a stale release; after a stale extend, it
  can once the successor's own TTL has run out, and no key's TTL went up in its round trip);
* stale-grant: an acquire or extend that reports success after a stall longer than the TTL
  inside it reports a lease that is there (the probe cannot take the lock right after). When its
  token is still on some of the copies it wrote (keys, or masters) but not all, and the probe
  gets in, it is mutual exclusion: a quorum counted from copies that had run out, two holders.

What a release or extend returns or raises for a lease no longer held is never judged:
refusing is correct. See contend.machines.locks for the rules that make these moments.
"""

from __future__ import annotations

from contend.impl.catalog import MUTUAL_EXCLUSION, SAFE_RELEASE, STALE_GRANT
from contend.machines.base import EXPIRED_NOTE
from contend.machines.lock_leases import LeaseBook
from contend.schedule.client import Status
from contend.schedule.trace import TraceEntry


class StaleLeases(LeaseBook):
    """safe-release and stale-grant, judged on the lease book."""

    def check_stale_grant(self, index: int, what: str, began: int) -> None:
        """stale-grant: client `index`'s `what`, which began at trace position `began`, reported
        success after a stall longer than the TTL between its round trips: the lease it reports
        must be there, so a third client cannot take the lock right after."""
        inside = self.stalls_since(began)
        if not inside or STALE_GRANT not in self.judged or self.limit != 1 or not self.server_keeps_time:
            return
        if self.valid_holders() - {index} or any(
            label.startswith("acquire") for c, label in self.in_flight.items() if c != index
        ):
            return  # another holder (mutual exclusion judges that) or acquirer: the probe would say nothing
        if self.scheduler.clients[index].status is not Status.IDLE:
            return  # it died meanwhile (a planned crash)
        name = self.scheduler.clients[index].name
        trace = self.scheduler.trace
        first = next(
            (i for i in range(began, len(trace)) if trace[i].client == name and trace[i].sent), began
        )
        if not any(EXPIRED_NOTE in entry.note for entry in trace[first:]) and not self.own_clock_ran_out(
            index, first, inside
        ):
            return  # nothing it wrote can have run out: a lease that is gone was taken (safe release judges)
        self.met[STALE_GRANT] += 1
        live, named = self.own_copies(name, first)
        if self.probe_acquires():
            names = [c.name for c in self.scheduler.clients]
            at, after = inside[-1]
            if live and len(live) < len(named) and MUTUAL_EXCLUSION in self.claims:
                self.fail(
                    MUTUAL_EXCLUSION,
                    f"{names[index]}'s {what} returned success at virtual time {self.scheduler.vclock:.3f} s "
                    f"with its token on {len(live)} of the {len(named)} copies it wrote ({', '.join(sorted(live))}), "
                    f"after a stall of {self.stall_length:g} s (longer than the {self.ttl:g} s TTL) between its "
                    f"round trips (step #{at}, ending at {after:.3f} s): a third client took the lock right after, "
                    "while it holds it: a quorum counted from copies that had run out",
                )
            self.fail(
                STALE_GRANT,
                f"{names[index]}'s {what} returned success at virtual time {self.scheduler.vclock:.3f} s, "
                f"after a stall of {self.stall_length:g} s (longer than the {self.ttl:g} s TTL) between its "
                f"round trips (step #{at}, ending at {after:.3f} s), and the lease it reports was not "
                "there: a third client took the lock right after",
            )

    def own_copies(self, name: str, first: int) -> tuple[set[str], set[str]]:
        """Where the keys client `name` named since trace position `first` are ("key" on the
        server, "key on URL" on the other masters), and those of them that hold a value it sent
        since then (its token, still there)."""
        sent = [cmd for step in self.scheduler.trace[first:] if step.client == name for cmd in step.sent]
        args = {str(arg) for cmd in sent for arg in cmd[1:]}
        values = self.key_values()
        main = next(iter(values))[0] if values else ""
        places = {
            (where, key): value
            for (where, key), value in values.items()
            if key in args and (where == main or not where.startswith("db "))
        }
        live = {
            p for p, value in places.items() if value is not None and value.decode(errors="replace") in args
        }

        def shown(place: tuple[str, str]) -> str:
            return place[1] if place[0] == main else f"{place[1]} on {place[0]}"

        return {shown(p) for p in live}, {shown(p) for p in places}

    def own_clock_ran_out(self, index: int, first: int, inside: list[tuple[int, float]]) -> bool:
        """A lease the lock times by its client's wall clock (an expiry time as the value, no TTL on
        the server) ran out in a stall that came after the operation's first round trip, unless
        another client sent anything since: a lease someone else took away is safe release's to
        judge, not a stale grant."""
        client = self.scheduler.clients[index]
        later = [at for at, _ in inside if at > first]
        if not later or not (client.read_wall_clock or self.takes_clock):
            return False
        return not any(e.sent and e.client != client.name for e in self.scheduler.trace[later[-1] :])

    def after_stale(self, index: int, what: str) -> None:
        """safe-release: client `index`'s `what` came after its lease expired; a successor's
        lease must be as it was."""
        successors = self.valid_holders() - {index}
        if SAFE_RELEASE not in self.claims or self.limit != 1 or not successors:
            return
        if any(label.startswith("acquire") for c, label in self.in_flight.items() if c != index):
            return  # another acquire may hold the key already: the probe would say nothing
        names = [c.name for c in self.scheduler.clients]
        successor = min(successors)
        self.met[SAFE_RELEASE] += 1
        if what == "release":
            if self.probe_acquires():
                if self.released_only_own(index, successor):
                    if MUTUAL_EXCLUSION in self.claims:
                        self.fail(
                            MUTUAL_EXCLUSION,
                            f"a third client acquired while {names[successor]} holds a valid lease "
                            f"(virtual time {self.scheduler.vclock:.3f} s); {names[index]}'s release "
                            "of its expired lease before it changed only keys that held its own token",
                        )
                    return
                self.fail(
                    SAFE_RELEASE,
                    f"{names[index]}'s release after its lease expired freed the lease {names[successor]} "
                    f"holds: a third client acquired right after (virtual time {self.scheduler.vclock:.3f} s)",
                )
            return
        if not self.server_keeps_time or successor in self.extends:
            return  # its lease does not run out on the virtual clock, or it extends it itself
        honest_end = self.written_at[successor] + self.lease_len.get(successor, self.ttl)
        self.scheduler.advance(
            max(0.0, honest_end - self.scheduler.jumped) + self.past,
            note=f"{names[successor]} pauses until its own lease must have run out",
        )
        if not self.probe_acquires():
            self.fail(
                SAFE_RELEASE,
                f"{names[index]}'s extend after its lease expired (a stale extend) prolonged the lease {names[successor]} "
                f"holds: {self.ttl:g} s after {names[successor]} last wrote it, a third client still "
                "cannot acquire",
            )

    # Before and after a stale round trip ----------------------------------------------
    def before_step(self, index: int) -> None:
        """Before a round trip of an extend whose lease has run out while another client holds
        the lock, read the TTLs of the keys the clients named: the extend must not raise one.
        Before a round trip of such a release, read the keys' values (`note_release_changes`)."""
        self.ttls_before = None
        self.release_before = None
        if (
            SAFE_RELEASE in self.claims
            and self.limit == 1
            and self.in_flight.get(index, "").startswith("release")
            and self.surely_expired(index)
            and self.valid_holders() - {index}
            and self._known_keys
        ):
            self.release_before = index, self.key_values()
        stale = self.surely_expired(index)
        if (
            SAFE_RELEASE in self.claims
            and self.limit == 1
            and stale
            and self.in_flight.get(index, "").startswith("extend")
            and self.valid_holders() - {index}
            and self._known_keys
        ):
            self.ttls_before = index, self.key_ttls()
            self.values_before = self.key_values()

    def key_ttls(self) -> dict[str, int]:
        """PTTL (ms) of every key of the namespace the clients have named."""
        keys = sorted(self._known_keys)
        with self.admin.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.pttl(key)
            return dict(zip(keys, pipe.execute(), strict=True))

    def check_prolonging(self, last: TraceEntry | None) -> None:
        """safe-release: the stale extend's round trip just taken raised no key's TTL."""
        if self.ttls_before is None or last is None or not last.sent:
            return
        index, before = self.ttls_before
        self.ttls_before = None
        names = [c.name for c in self.scheduler.clients]
        if last.client != names[index]:
            return
        holders = self.valid_holders() - {index}
        if not holders:
            return  # the successor's lease ran out in the round trip itself: nobody's to take
        after = self.key_ttls()
        self.met[SAFE_RELEASE] += 1
        holder = names[min(holders)]
        mine, theirs = self.arguments_of(names[index]), self.arguments_of(holder)
        taken = [
            key
            for (where, key), value in self.key_values().items()
            if value is not None
            and self.values_before.get((where, key)) not in (None, value)
            and value.decode(errors="replace") in mine - theirs
        ]
        if taken:
            self.fail(
                SAFE_RELEASE,
                f"{names[index]}'s extend after its lease expired (a stale extend) overwrote the lease {holder} "
                f"holds: {taken[0]} held another value before its round trip and one {names[index]} sent after",
            )
        raised = [
            (k, ms, after.get(k, -2)) for k, ms in before.items() if ms > 0 and after.get(k, -2) > ms + 1
        ]
        if raised:
            key, was, now = raised[0]
            self.fail(
                SAFE_RELEASE,
                f"{names[index]}'s extend after its lease expired (a stale extend) prolonged the lease {holder} holds: "
                f"{key} had {was} ms left and has {now} ms after {names[index]}'s round trip",
            )

    def key_values(self) -> dict[tuple[str, str], bytes | None]:
        """The value of every key the clients named, on every server and database the namespace
        spans ((where, key) -> GET's reply; a key of another type reads as its type's name)."""
        keys = sorted(self._known_keys)
        values: dict[tuple[str, str], bytes | None] = {}
        for where, client in self.ns.stores():
            with client.pipeline(transaction=False) as pipe:
                for key in keys:
                    pipe.get(key)
                replies = pipe.execute(raise_on_error=False)
            for key, reply in zip(keys, replies, strict=True):
                values[where, key] = b"<not a string>" if isinstance(reply, Exception) else reply
        return values

    def note_release_changes(self, last: TraceEntry | None) -> None:
        """After a stale release's round trip (from `after_step`, or from `completed` when it
        was the last and its end is judged first): note what the keys it changed held before."""
        if self.release_before is None or last is None or not last.sent:
            return
        index, before = self.release_before
        self.release_before = None
        if last.client != self.scheduler.clients[index].name:
            return
        after = self.key_values()
        changed = [value for place, value in before.items() if after.get(place) != value]
        self.release_changed.setdefault(index, []).extend(changed)

    def arguments_of(self, name: str) -> set[str]:
        """Every argument client `name` has sent in this example (its tokens among them)."""
        return {
            str(arg)
            for step in self.scheduler.trace
            if step.client == name
            for cmd in step.sent
            for arg in cmd[1:]
        }

    def released_only_own(self, index: int, successor: int) -> bool:
        """Did client `index`'s stale release change only keys holding a value it sent itself
        (its token) and the successor did not? Then it gave back its own copies: the successor's
        lease is as it was."""
        changed = self.release_changed.pop(index, [])

        names = [c.name for c in self.scheduler.clients]
        own, theirs = self.arguments_of(names[index]), self.arguments_of(names[successor])
        for value in changed:
            if value is None:
                return False  # a key made by the release: not its own copy given back
            text = value.decode(errors="replace")
            if text not in own or text in theirs:
                return False
        return True
