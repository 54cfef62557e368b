"""The queue machine's book of puts and deliveries, and the judgements read from it.

Each put and each delivery is noted with the virtual times that bound it (a delivery's lease runs
from its take's start, or its put's if later, for the queue's lease); acks, nacks and extends
are noted as they return. contend.machines.queue runs the rules and calls these judgements: a
delivery is judged when its take returns (no-phantom, no-double-delivery, ack-final, fifo) and
the items at the end (no-loss).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from contend.impl.catalog import ACK_FINAL, FIFO, NO_DOUBLE_DELIVERY, NO_LOSS, NO_PHANTOM
from contend.machines.base import ScheduledMachine


@dataclass
class Put:
    number: int
    client: str
    item: Any
    began: float
    ended: float | None = None
    status: str = "running"  # running, ok, maybe (raised, crashed: 0 or 1 copy), uncertain (resent)
    job: Any = None


@dataclass
class Delivery:
    number: int
    client: int
    name: str
    job: Any
    item: Any
    began: float  # the take's start
    ended: float  # its return
    valid_until: float
    let_go: float | None = None  # when its ack or nack started
    acked: str = ""  # "", "yes" (valid, returned), "maybe" (lost reply, crashed, late), "refused"
    ack_returned: float = float("inf")
    extend_began: float | None = None
    fate: list[str] = field(default_factory=list)  # what became of it, for the evidence


def as_compared(value: Any) -> Any:
    """An item or id as the machine compares them: bytes decoded, lists as tuples."""
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return value
    if isinstance(value, list | tuple):
        return tuple(as_compared(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((str(k), as_compared(v)) for k, v in value.items()))
    return value


def refused(outcome: Any) -> bool:
    """Did an ack, nack or extend refuse (raise, or return False or 0)? None is success."""
    return outcome.error is not None or (outcome.value is not None and not outcome.value)


class DeliveryBook(ScheduledMachine):
    """The puts and deliveries of an example, and the properties judged from them.

    Subclasses set `claims`, `probe` (the client that drains at the end) and `lease` (None: the
    queue declares no lease); `running` holds what each client is doing.
    """

    claims: frozenset[str] = frozenset()
    lease: float | None = None
    probe: int

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.puts: list[Put] = []
        self.deliveries: list[Delivery] = []
        self.running: dict[int, tuple[str, Any]] = {}  # client -> (what, its Put or Delivery)
        self.maybe_takes: list[float] = []  # when takes of unknown outcome began
        self.last_lease_end = 0.0
        super().__init__(*args, **kwargs)

    @property
    def lease_text(self) -> str:
        return "no lease (lease_ms is None)" if self.lease is None else f"a {self.lease:g} s lease"

    def deliver(self, index: int, name: str, job: Any, item: Any, began: float) -> Delivery:
        """Record a delivery that just returned and judge it (phantom, double delivery, ack-final, fifo)."""
        now = self.scheduler.vclock
        puts = [p for p in self.puts if p.item == item and p.began <= now]
        if not puts and NO_PHANTOM in self.claims:
            self.fail(NO_PHANTOM, f"{name} take returned ({job!r}, {item!r}): no put of {item!r} had begun")
        same_id = [p for p in self.puts if p.status == "ok" and p.job == job]
        if same_id and all(p.item != item for p in same_id) and NO_PHANTOM in self.claims:
            self.fail(
                NO_PHANTOM,
                f"{name} take returned ({job!r}, {item!r}), but {job!r} is the id put({same_id[0].item!r}) returned",
            )
        start = max(began, min(p.began for p in puts)) if puts else began
        lease_end = float("inf") if self.lease is None else start + self.lease
        delivery = Delivery(len(self.deliveries) + 1, index, name, job, item, began, now, lease_end)
        self.note_situations(delivery)
        self.judge_delivery(delivery)
        if FIFO in self.claims:
            self.check_fifo(delivery)
        self.deliveries.append(delivery)
        self.last_lease_end = max(self.last_lease_end, now + (self.lease or 0))
        return delivery

    def note_situations(self, d: Delivery) -> None:
        """Count the situations the delivery's properties are judged in (QueueMachine.situations)."""
        if any(
            x.client != d.client and x.let_go is None and x.valid_until >= d.ended for x in self.deliveries
        ):
            self.met[NO_DOUBLE_DELIVERY] += 1
        if any(x.acked == "yes" and x.ack_returned <= d.began for x in self.deliveries):
            self.met[ACK_FINAL] += 1
        delivered = {x.item for x in self.deliveries}
        undelivered = [
            p
            for p in self.puts
            if p.status == "ok" and p.ended is not None and p.ended <= d.began and p.item not in delivered
        ]
        if len(undelivered) >= 2:
            self.met[FIFO] += 1

    def judge_delivery(self, d: Delivery) -> None:
        puts = [p for p in self.puts if p.item == d.item and p.began <= d.ended]
        if any(p.status == "uncertain" for p in puts):
            return  # a put resent after a lost reply: how many copies there are is unknown
        copies = len(puts)
        acked = [x for x in self.deliveries if x.item == d.item and x.acked == "yes" and x.let_go is not None]
        done_before = [x for x in acked if self._ack_returned(x) <= d.began]
        outstanding = copies - len(done_before)
        if outstanding <= 0 and ACK_FINAL in self.claims:
            x = done_before[-1]
            self.fail(
                ACK_FINAL,
                f"{d.name} take returned {d.item!r} (delivery #{d.number}, began at {d.began:.3f} s); "
                f"{x.name} had acked it (delivery #{x.number}, lease valid until {x.valid_until:.3f} s, ack "
                f"returned by {self._ack_returned(x):.3f} s), and {copies} cop{'y' if copies == 1 else 'ies'} "
                "of it had been put",
            )
        later = d.ended
        holders = [
            x
            for x in self.deliveries
            if x.item == d.item
            and (x.let_go is None or x.let_go >= later)
            and x.valid_until >= max(x.ended, later)
            and d.valid_until >= max(x.ended, later)
        ]
        if len(holders) + 1 > outstanding and holders and NO_DOUBLE_DELIVERY in self.claims:
            held = ", ".join(
                f"{x.name} (delivery #{x.number}, taken at {x.ended:.3f} s, lease valid until {x.valid_until:.3f} s)"
                for x in holders
            )
            self.fail(
                NO_DOUBLE_DELIVERY,
                f"{d.name} take returned {d.item!r} at {d.ended:.3f} s (delivery #{d.number}) while {held} "
                f"held a valid lease on it ({self.lease_text}; {copies} cop{'y' if copies == 1 else 'ies'} "
                f"put, {len(done_before)} acked)",
            )

    def _ack_returned(self, d: Delivery) -> float:
        return d.ack_returned

    def check_fifo(self, d: Delivery) -> None:
        """fifo: a first delivery of a value put once must not overtake a value put once before it
        (its put returned before this one's began) that no take has delivered, beyond what takes of
        unknown outcome, and takes still under way, may have dequeued."""
        mine = [p for p in self.puts if p.item == d.item]
        if len(mine) != 1 or any(x.item == d.item for x in self.deliveries):
            return
        delivered = {x.item for x in self.deliveries}
        once = {p.item for p in self.puts if sum(q.item == p.item for q in self.puts) == 1}
        skipped = [
            p
            for p in self.puts
            if p.status == "ok"
            and p.ended is not None
            and p.ended <= mine[0].began  # a completion is noted after its step's tick: <= is "before"
            and p.item in once
            and p.item not in delivered
        ]
        unknown = sum(1 for t in self.maybe_takes if t <= d.ended)
        under_way = sum(1 for i, (what, _) in self.running.items() if what == "take" and i != d.client)
        if len(skipped) > unknown + under_way:
            first = skipped[0]
            self.fail(
                FIFO,
                f"{d.name} take returned {d.item!r} (put by {mine[0].client}, began at {mine[0].began:.3f} s) "
                f"while {first.item!r} (put by {first.client}, returned at {first.ended:.3f} s) had never been "
                f"delivered"
                + (f"; {unknown + under_way} take(s) of unknown outcome" if unknown + under_way else ""),
            )

    def check_loss(self, drained: int) -> None:
        for item in dict.fromkeys(p.item for p in self.puts):
            puts = [p for p in self.puts if p.item == item]
            if any(p.status == "uncertain" for p in puts):
                continue
            mine = [d for d in self.deliveries if d.item == item]
            at_end = [d for d in mine if d.client == self.probe]
            during = [d for d in mine if d.client != self.probe]
            done = sum(d.acked in ("yes", "maybe") for d in during)
            required = sum(p.status == "ok" for p in puts) - done
            if len(at_end) >= required:
                continue
            story = "; ".join(
                f"delivery #{d.number} to {d.name} at {d.ended:.3f} s (lease until {d.valid_until:.3f} s"
                + (f", {', '.join(d.fate)}" if d.fate else ", never acked")
                + ")"
                for d in during
            )
            self.fail(
                NO_LOSS,
                f"{item!r} was put {len(puts)} time(s) ({sum(p.status == 'ok' for p in puts)} returned), acked "
                f"{done} time(s) and never came back: after twice the lease, a fresh consumer drained "
                f"{drained} job(s) and got it {len(at_end)} time(s) ({self.lease_text}). "
                + (f"Its deliveries: {story}" if story else "It was never delivered")
                + (f"; {len(self.maybe_takes)} take(s) of unknown outcome" if self.maybe_takes else ""),
            )
