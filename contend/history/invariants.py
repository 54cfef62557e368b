"""Linear-time checks for histories too long to search (in the spirit of Elle).

Each looks at one property the implementations claim and returns the
violations it finds, each naming the operations involved: registry ids
unique, stable and gap-free; lock hold intervals never overlapping; fencing
tokens increasing; a lock-protected counter equal to its ok increments.
They are necessary conditions of linearizability, not sufficient ones.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from contend.history.records import UNSENT, Call
from contend.models.base import freeze

INF = float("inf")

#: A hold: (from, until, the acquire, the call that ends it), times in ns (until may be INF).
_Span = tuple[float, float, Call, Call | None]


@dataclass(frozen=True)
class Violation:
    """One broken invariant and the operations that show it."""

    check: str
    message: str
    calls: tuple[Call, ...]

    def __str__(self) -> str:
        where = ", ".join(c.where() for c in self.calls)
        return f"{self.check}: {self.message}" + (f" [{where}]" if where else "")

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "message": self.message,
            "calls": [{"id": c.id, "line": c.invoke.line, "describe": c.describe()} for c in self.calls],
        }


#: A linear-time check: the violations it finds in a history's calls.
Invariant = Callable[[Sequence[Call]], list[Violation]]


# --------------------------------------------------------------------------- registry


def registry_ids(calls: Sequence[Call], *, gap_free: bool = True) -> list[Violation]:
    """Distinct names get distinct ids, a name keeps its id, ids are 1..n with no gap.

    Reads the ids clients saw: register(name) → id, lookup(name) → id,
    reverse(id) → name. Also: a lookup that starts after a register of the
    same name completed must not answer nil. `gap_free` also requires every
    id to be at most the number of names that may have been registered.
    """
    out: list[Violation] = []
    name_id: dict[Any, tuple[int, Call]] = {}
    id_name: dict[int, tuple[Any, Call]] = {}
    registered_at: dict[Any, tuple[int, Call]] = {}
    may_register: set[Any] = set()
    nil_lookups: list[Call] = []
    counts: list[Call] = []

    def observe(name: Any, ident: Any, c: Call) -> None:
        if isinstance(ident, bool) or not isinstance(ident, int) or ident < 1:
            out.append(Violation("registry ids", f"{name!r} got id {ident!r}; ids are integers from 1", (c,)))
            return
        seen = name_id.get(name)
        if seen is None:
            name_id[name] = (ident, c)
        elif seen[0] != ident:
            out.append(
                Violation(
                    "registry ids", f"{name!r} has id {seen[0]}, then id {ident} (not stable)", (seen[1], c)
                )
            )
        owner = id_name.get(ident)
        if owner is None:
            id_name[ident] = (name, c)
        elif owner[0] != name:
            out.append(
                Violation(
                    "registry ids",
                    f"id {ident} given to both {owner[0]!r} and {name!r} (not unique)",
                    (owner[1], c),
                )
            )

    for c in calls:
        if c.status == "fail":
            continue
        if c.f in ("register", "register_many") and c.status in ("ok", "info"):
            names = c.value if c.f == "register_many" and isinstance(c.value, list | tuple) else [c.value]
            may_register.update(freeze(n) for n in names)
        if c.status != "ok":
            continue
        if c.f == "register":
            observe(freeze(c.value), c.output, c)
            if c.end is not None:
                first = registered_at.get(freeze(c.value))
                if first is None or c.end < first[0]:
                    registered_at[freeze(c.value)] = (c.end, c)
        elif (
            c.f == "register_many"
            and isinstance(c.value, list | tuple)
            and isinstance(c.output, list | tuple)
        ):
            for name, ident in zip(c.value, c.output, strict=False):
                observe(freeze(name), ident, c)
                if c.end is not None:
                    first = registered_at.get(freeze(name))
                    if first is None or c.end < first[0]:
                        registered_at[freeze(name)] = (c.end, c)
        elif c.f == "lookup":
            if c.output is None:
                nil_lookups.append(c)
            else:
                observe(freeze(c.value), c.output, c)
        elif c.f == "reverse" and c.output is not None:
            observe(freeze(c.output), c.value, c)
        elif c.f == "count":
            counts.append(c)

    for c in nil_lookups:
        first = registered_at.get(freeze(c.value))
        if first is not None and first[0] < c.start:
            out.append(
                Violation(
                    "registry ids",
                    f"lookup({c.value!r}) → nil after its register completed (not stable)",
                    (first[1], c),
                )
            )
    if gap_free:
        bound = len(may_register)
        for ident in sorted(i for i in id_name if i > bound):
            name, c = id_name[ident]
            out.append(
                Violation(
                    "registry ids",
                    f"id {ident} for {name!r}, but at most {bound} names were ever registered (a gap)",
                    (c,),
                )
            )
        for c in counts:
            if isinstance(c.output, int) and c.output > bound:
                out.append(
                    Violation(
                        "registry ids", f"count() → {c.output} exceeds the {bound} names registered", (c,)
                    )
                )
    return out


# --------------------------------------------------------------------------- locks


def _held(output: Any) -> bool:
    """Did an acquire succeed? True, a token, or a mapping with a truthy `acquired`."""
    if isinstance(output, dict):
        return bool(output.get("acquired", output.get("token") is not None))
    if isinstance(output, list | tuple):
        return bool(output) and bool(output[0])
    return output is not None and output is not False


def lock_holds(
    calls: Sequence[Call],
    *,
    acquire: str = "acquire",
    release: str = "release",
    held: Callable[[Any], bool] = _held,
    ttl_ms: int | None = None,
) -> list[Violation]:
    """Hold intervals of a lock (per key) never overlap.

    A process surely holds the lock from its successful acquire's completion
    to the first of: its next release's invocation (a failed release frees
    nothing), the invocation of an `expire` of that key invoked after the
    acquire was (a lease end the recorder saw), the end of its lease when
    `ttl_ms` is known (acquire invoked + ttl), or the end of the history.
    Two such intervals that overlap mean two clients believed they held it at once.
    """
    ttl_ns = None if ttl_ms is None else ttl_ms * 1_000_000
    by_process: dict[Any, list[Call]] = {}
    expiries: dict[Any, list[float]] = {}
    for c in calls:
        if c.f in (acquire, release):
            by_process.setdefault(c.process, []).append(c)
        elif c.f == "expire":
            expiries.setdefault(freeze(c.key), []).append(c.start)
    for starts in expiries.values():
        starts.sort()
    intervals: dict[Any, list[_Span]] = {}
    for ops in by_process.values():
        ops.sort(key=lambda c: c.start)
        for k, c in enumerate(ops):
            if c.f != acquire or c.status != "ok" or c.end is None or not held(c.output):
                continue
            rel = next(
                (r for r in ops[k + 1 :] if r.f == release and r.key == c.key and r.status != "fail"), None
            )
            until: float = rel.start if rel is not None else INF
            ends = expiries.get(freeze(c.key), [])
            after = bisect.bisect_left(ends, c.start)  # an expiry while the acquire was in flight counts
            if after < len(ends):
                until = min(until, ends[after])
            if ttl_ns is not None:
                until = min(until, c.start + ttl_ns)
            if until > c.end:  # a lease that ran out before its acquire returned was never surely held
                intervals.setdefault(freeze(c.key), []).append((c.end, until, c, rel))
    out: list[Violation] = []
    for key, spans in intervals.items():
        for reach, span, _ in overlapping(spans):
            lock = "" if key is None else f" {key!r}"
            out.append(
                Violation(
                    "lock holds",
                    f"{_who(span[2])} acquired lock{lock} while {_who(reach[2])} still held it",
                    (reach[2], span[2]),
                )
            )
    return out


def overlapping(spans: Sequence[_Span]) -> Iterator[tuple[_Span, _Span, bool]]:
    """(reach, span, first) for each span that starts before `reach`, the earlier span that ends
    last, has ended; `first` is True for the first such span since `reach` took that place."""
    reach: _Span | None = None
    first = True
    for span in sorted(spans, key=lambda s: (s[0], s[1])):
        if reach is not None and span[0] < reach[1]:
            yield reach, span, first
            first = False
        if reach is None or span[1] > reach[1]:
            reach = span
            first = True


def _token(output: Any) -> int | None:
    if isinstance(output, bool):
        return None
    if isinstance(output, int):
        return output
    if isinstance(output, dict):
        t = output.get("token")
        return t if isinstance(t, int) and not isinstance(t, bool) else None
    if isinstance(output, list | tuple) and len(output) == 2 and output[0] is True:
        return _token(output[1])
    return None


def fencing_tokens(
    calls: Sequence[Call], *, acquire: str = "acquire", token: Callable[[Any], int | None] = _token
) -> list[Violation]:
    """Tokens of successful acquires (per key) are distinct and increase in real time.

    If acquire A completed before acquire B was invoked, A's token is smaller.
    """
    out: list[Violation] = []
    groups: dict[Any, list[tuple[int, Call]]] = {}
    for c in calls:
        if c.f == acquire and c.status == "ok" and c.end is not None:
            t = token(c.output)
            if t is not None:
                groups.setdefault(c.key, []).append((t, c))
    for items in groups.values():
        owner: dict[int, Call] = {}
        for t, c in items:
            if t in owner:
                out.append(Violation("fencing tokens", f"token {t} handed out twice", (owner[t], c)))
            else:
                owner[t] = c
        by_start = sorted(items, key=lambda x: x[1].start)
        ended: list[tuple[int, int, int, Call]] = [(c.end or 0, -t, k, c) for k, (t, c) in enumerate(items)]
        heapq.heapify(ended)
        top: tuple[int, Call] | None = None
        for t, c in by_start:
            while ended and ended[0][0] < c.start:
                _, neg, _, done = heapq.heappop(ended)
                if top is None or -neg > top[0]:
                    top = (-neg, done)
            if top is not None and t <= top[0]:
                out.append(
                    Violation(
                        "fencing tokens",
                        f"token {t} issued after token {top[0]} had been (tokens must increase)",
                        (top[1], c),
                    )
                )
    return out


def locked_counter(
    calls: Sequence[Call],
    *,
    incr: str = "incr",
    read: str = "read",
    amount: Callable[[Call], int] | None = None,
) -> list[Violation]:
    """A counter protected by a lock equals the number of ok increments.

    Each read must lie between the increments that surely happened before it
    (ok, completed before the read began) and those that may have (ok or
    info, invoked before the read returned).
    """
    size = amount or (lambda c: c.value if isinstance(c.value, int) and not isinstance(c.value, bool) else 1)
    counters: dict[Any, list[Call]] = {}  # each counter (key) on its own
    for c in calls:
        if c.f in (incr, read):
            counters.setdefault(freeze(c.key), []).append(c)
    out: list[Violation] = []
    for ops in counters.values():
        done = sorted((c.end, size(c)) for c in ops if c.f == incr and c.status == "ok" and c.end is not None)
        begun = sorted((c.start, size(c)) for c in ops if c.f == incr and c.status in ("ok", "info"))
        done_at, done_sum = _prefix(done)
        begun_at, begun_sum = _prefix(begun)
        for c in ops:
            if c.f != read or c.status != "ok" or not isinstance(c.output, int):
                continue
            low = done_sum[bisect.bisect_left(done_at, c.start)]
            high = begun_sum[bisect.bisect_right(begun_at, c.end if c.end is not None else INF)]
            if c.output < low:
                what = f"at least {low} increments had taken effect (lost update)"
            elif c.output > high:
                what = f"at most {high} increments had been invoked (a count of increments never made)"
            else:
                continue
            out.append(Violation("locked counter", f"read {c.output}, but {what}", (c,)))
    return out


def _prefix(points: Iterable[tuple[Any, int]]) -> tuple[list[Any], list[int]]:
    at: list[Any] = []
    sums = [0]
    for t, n in points:
        at.append(t)
        sums.append(sums[-1] + n)
    return at, sums


# --------------------------------------------------------------------------- helpers


def _who(c: Call) -> str:
    return f"process {c.process}"


def registry_errors(calls: Sequence[Call]) -> list[Violation]:
    """A registry never refuses a valid name: a register of non-empty string names that failed
    (a definite error) is a spurious error. Refusing bad input (an empty or non-string name) is
    what the protocol asks for, and an operation that never reached the server proves nothing."""
    failed = [
        c
        for c in calls
        if c.f in ("register", "register_many")
        and c.status == "fail"
        and _valid_names(c.value if c.f == "register_many" else [c.value])
        and not str(c.completion.error if c.completion else "").startswith(UNSENT)
    ]
    if not failed:
        return []
    first = failed[0]
    error = first.completion.error if first.completion is not None else None
    return [
        Violation(
            "registry errors",
            f"{len(failed)} register call(s) failed, the first with {error or 'an error'} "
            "(a correct registry never refuses a name)",
            (first,),
        )
    ]


def _valid_names(names: Any) -> bool:
    return isinstance(names, list | tuple) and all(isinstance(n, str) and n for n in names)


@dataclass
class Hold:
    """A successful acquire, the critical-section writes its process made, and the release that ended it."""

    acquire: Call
    writes: list[Call]
    release: Call | None = None


def _holds(calls: Sequence[Call]) -> list[Hold]:
    """Each process's successful acquires, per lock key, with the writes it made while holding
    (to any key: the resource a lock protects is another key) and the release that ended it."""
    by_process: dict[Any, list[Call]] = {}
    for c in calls:
        if c.f in ("acquire", "release", "incr"):
            by_process.setdefault(c.process, []).append(c)
    holds: list[Hold] = []
    for ops in by_process.values():
        ops.sort(key=lambda c: (c.start, c.id))
        current: dict[Any, Hold] = {}  # lock key → the process's open hold of it
        for c in ops:
            if c.f == "acquire":
                current.pop(freeze(c.key), None)
                if c.status == "ok" and c.end is not None and c.output is not False and c.output is not None:
                    current[freeze(c.key)] = Hold(c, [])
                    holds.append(current[freeze(c.key)])
            elif c.f == "incr":
                for hold in current.values():
                    hold.writes.append(c)
            elif c.f == "release" and freeze(c.key) in current:
                current.pop(freeze(c.key)).release = c
    return holds


def critical_sections(calls: Sequence[Call]) -> list[Violation]:
    """No two processes are in the critical section at once, counting only writes that took effect.

    A process is surely inside from its acquire's return to the call of its
    last write that took effect (ok) in that hold. Two such spans that overlap
    mean two clients acted as holders at once and both their writes landed: a
    lease that expired under a paused client, unfenced, does this. A write the
    resource refused (a stale fencing token: fail) does not count, nor do two fenced holds whose
    writes may have landed in token order (see _in_token_order).
    """
    by_lock: dict[Any, list[_Span]] = {}
    first_write: dict[int, Call] = {}  # a hold's first write that landed, by its acquire's id
    for hold in _holds(calls):
        acquire = hold.acquire
        landed = [w for w in hold.writes if w.status == "ok"]
        if landed:
            first_write[acquire.id] = min(landed, key=lambda w: w.start)
        if landed and acquire.end is not None:
            last = max(landed, key=lambda w: w.start)
            if last.start > acquire.end:
                by_lock.setdefault(freeze(acquire.key), []).append((acquire.end, last.start, acquire, last))
    out: list[Violation] = []
    reported: set[int] = set()
    for reach, span, _ in (found for spans in by_lock.values() for found in overlapping(spans)):
        if _in_token_order(reach, span, first_write):
            continue
        if reach[2].id not in reported:  # one violation per span that others overlap
            reported.add(reach[2].id)
            out.append(
                Violation(
                    "critical sections",
                    f"process {span[2].process} acquired the lock and wrote while process "
                    f"{reach[2].process}, holding it since earlier, had yet to write; both writes "
                    "took effect (two holders at once)",
                    tuple(c for c in (reach[2], span[2], reach[3]) if c is not None),
                )
            )
    return out


def _in_token_order(a: _Span, b: _Span, first_write: dict[int, Call]) -> bool:
    """Two overlapping holds with fencing tokens whose writes may have reached the resource in
    token order (the lower token's last write was called before the higher token's first write
    returned): the resource saw increasing tokens, which is all fencing promises, so the overlap
    harmed nothing. A lease that ran out under a starved holder, whose write then landed just
    before its successor's, does this; a lower token's write that surely came after a higher
    one's (a resource that took a stale write) does not."""
    ta, tb = _token(a[2].output), _token(b[2].output)
    if ta is None or tb is None or ta == tb:
        return False
    lower, higher = (a, b) if ta < tb else (b, a)
    first = first_write.get(higher[2].id)
    return (
        lower[3] is not None and first is not None and first.end is not None and lower[3].start <= first.end
    )


#: Slack for the server's millisecond expiry clock, in ns.
LEASE_SLACK_NS = 5_000_000


def lease_validity(calls: Sequence[Call], ttl_ms: int) -> list[Violation]:
    """A lease lasts its TTL unless released: it is never lost early.

    If p's acquire was called at t, its lease runs until at least t + ttl on the
    server. It was lost early when, before then and before p released it,
    another acquire (called after p's returned; by any process, p included)
    succeeded, or p's own release found it gone ("not-owner"): a restart
    without persistence, a failover, or a lock that is not exclusive.
    """
    ttl_ns = ttl_ms * 1_000_000
    holds = sorted(_holds(calls), key=lambda h: h.acquire.end or 0)
    out: list[Violation] = []
    window: list[Hold] = []
    lost: set[int] = set()  # one violation per lease, not one per later grant

    def released_at(h: Hold) -> float:
        r = h.release
        return float("inf") if r is None or r.status == "fail" else r.start  # a failed release freed nothing

    for hold in holds:
        q = hold.acquire
        assert q.end is not None
        window = [h for h in window if h.acquire.start + ttl_ns > q.end + LEASE_SLACK_NS]
        for h in window:
            p = h.acquire
            assert p.end is not None
            if p.key == q.key and p.id not in lost and q.start > p.end and released_at(h) > q.end:
                left = (p.start + ttl_ns - q.end) / 1e6
                out.append(
                    Violation(
                        "lease validity",
                        f"process {q.process} acquired the lock while process {p.process}'s lease "
                        f"still had {left:.0f} ms of its {ttl_ms} ms to run and was not released (lost early)",
                        (p, q),
                    )
                )
                lost.add(p.id)
                break
        window.append(hold)
    for h in holds:
        p, r = h.acquire, h.release
        if (
            p.id not in lost
            and r is not None
            and r.status == "ok"
            and r.output == "not-owner"
            and r.end is not None
            and r.end + LEASE_SLACK_NS < p.start + ttl_ns
        ):
            left = (p.start + ttl_ns - r.end) / 1e6
            out.append(
                Violation(
                    "lease validity",
                    f"process {p.process}'s release found its lease gone with {left:.0f} ms of its "
                    f"{ttl_ms} ms still to run (lost early)",
                    (p, r),
                )
            )
    return out
