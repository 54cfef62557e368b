"""Why an unfenced lease lock had two holders in a stress run: a client-pause that outlived the
lease, in words beside the verdict.

`contend check` passes a lease lock whose leases never overlap (what a lease promises); stress
judges the writes to the resource, and a holder paused past its lease writes after another has
taken the lock, which no lease can stop. The explanation names the pause, says that only fencing
protects the resource, and points to the fenced lock and `--claim fencing`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from contend.history.invariants import Violation
from contend.history.records import Record

#: The nemesis records of contend.stress.faults_server.ClientPause.
_START = re.compile(r"start: process (?P<process>\S+) \(pid \d+\) stopped, holding the lock")
_STOP = re.compile(r"stop: process (?P<process>\S+) \(pid \d+\) resumed after (?P<ms>\d+) ms")
#: The invariants a second holder's write breaks.
TWO_HOLDER_CHECKS = frozenset({"critical sections", "locked counter", "lease validity"})
#: Where the docs say it at length.
DOCS = "docs/commands/stress.md#check-and-stress-side-by-side"


@dataclass(frozen=True)
class Pause:
    """A lock holder stopped by client-pause, and for how long."""

    process: str
    ms: int


def pauses_past_lease(nemesis: Sequence[Record], ttl_ms: int) -> list[Pause]:
    """The client-pauses that stopped a lock holder for longer than its lease."""
    holding: set[str] = set()
    found: list[Pause] = []
    for r in nemesis:
        text = str(r.value)
        if r.f != "client-pause":
            continue
        if m := _START.match(text):
            holding.add(m["process"])
        elif (m := _STOP.match(text)) and m["process"] in holding:
            holding.discard(m["process"])
            if int(m["ms"]) > ttl_ms:
                found.append(Pause(m["process"], int(m["ms"])))
    return found


def two_holders_explained(
    violations: Sequence[Violation], nemesis: Sequence[Record], ttl_ms: int, fenced: bool
) -> list[str]:
    """Lines that explain an unfenced lock's second holder by the pause that outlived its lease;
    none when the lock is fenced, no two-holder invariant broke, or no such pause stopped a
    process the violation involves."""
    if fenced:
        return []
    pauses = pauses_past_lease(nemesis, ttl_ms)
    found = [
        (pause, involved)
        for v in violations
        if v.check in TWO_HOLDER_CHECKS
        for involved in [{str(c.process) for c in v.calls}]
        for pause in pauses
        if pause.process in involved
    ]
    if not found:
        return []
    pause, involved = found[0]
    others = sorted(involved - {pause.process}, key=lambda p: (len(p), p))
    taker = f"process {others[0]}" if others else "another process"
    return [
        f"why: client-pause stopped process {pause.process} for {pause.ms} ms while it held the lock, "
        f"longer than its {ttl_ms} ms lease; the lease ran out, {taker} took the lock, and process "
        f"{pause.process} wrote when it resumed, as if it still held it.",
        "No lease lock can stop a holder paused past its lease (a GC pause, a stopped VM): only "
        "fencing protects the resource, which refuses a write whose token is older than one it has "
        "seen.",
        "contend check passes a lease lock whose leases never overlap, which is what a lease "
        "promises; stress judges the writes to the resource. For a lock that protects it: the "
        "fenced variant (--only fenced), or your lock's fencing token (an int from acquire, or a "
        "fencing_token attribute) checked with contend check --claim fencing; "
        f"see {DOCS}.",
    ]
