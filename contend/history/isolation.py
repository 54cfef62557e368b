"""Serializability from the order the server ran the commands: the conflict graph and its cycles.

Under contend's scheduler the server runs one round trip at a time, so the
order of every command is known; nothing has to be inferred (as Elle must from
a database's history). Each operation (a user-level call such as `transfer()`)
is a node; two operations conflict when they touch a key and one of them
writes it, and the edge points from the earlier access to the later one:

* ww: both write (two increments commute: no edge);
* wr: the later reads what the earlier wrote;
* rw: the later overwrites what the earlier read (an anti-dependency).

A MULTI/EXEC block and a script are one step. An attempt whose EXEC aborted
counts as nothing, its reads since WATCH included, and so does a WATCH attempt
the code gave up on (no EXEC). A successful EXEC vouches that the keys WATCHed
did not change since WATCH, so reads of them count as made at the EXEC. A read
whose reply was lost, or made by an operation that raised or crashed, is no
evidence (its writes, which the server ran, still count), and a lost reply ends
a WATCH attempt (the connection dropped, and the server forgot the WATCH).

A cycle means no serial order explains what happened; it is named in Adya's
terms as Elle names it: G0 (only ww), G1c (ww and wr), G-single (exactly one
rw: read skew; a lost update when two operations read and overwrite one key),
G2-item (two or more rw: write skew).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from contend.history.access import KeyAccess, accesses

#: The anomalies, weakest first (the one reported when a graph has several).
G0, G1C, LOST_UPDATE, G_SINGLE, G2_ITEM = "G0", "G1c", "lost update", "G-single", "G2-item"
#: What each is in the words of a bank.
ANOMALY_WORDS: dict[str, str] = {
    G0: "write cycle: two operations' writes interleaved",
    G1C: "circular information flow: each operation saw the other's writes",
    LOST_UPDATE: "two operations read one value and both overwrote it: one update is lost",
    G_SINGLE: "read skew: an operation saw part of another's writes and not the rest",
    G2_ITEM: "write skew: operations each read what the other then wrote",
}


@dataclass(frozen=True)
class RoundTrip:
    """One step of the server's order: operation `op` sent `commands` and the server answered `replies`."""

    op: str
    position: int
    commands: Sequence[Sequence[Any]]
    replies: Sequence[Any] = ()
    #: The server ran it but the reply never reached the client.
    lost: bool = False


@dataclass(frozen=True)
class Access:
    op: str
    key: str
    reads: bool
    writes: bool
    commutes: bool
    at: tuple[int, int]  # (position, index within the round trip)


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    kind: str  # ww, wr or rw
    key: str


@dataclass
class Cycle:
    """A cycle of the conflict graph, named: `edges[i].dst == edges[i + 1].src`, around."""

    anomaly: str
    edges: list[Edge]
    label: Callable[[str], str] = field(default=lambda key: key, repr=False)

    def path(self) -> str:
        """As Elle prints one: `T3 -rw(acct:a)-> T5 -ww(acct:b)-> T3`."""
        parts = [self.edges[0].src]
        for e in self.edges:
            parts.append(f"-{e.kind}({self.label(e.key)})-> {e.dst}")
        return " ".join(parts)

    def describe(self) -> str:
        return f"{self.anomaly} ({ANOMALY_WORDS[self.anomaly]}): {self.path()}"


def _is_data(key: str) -> bool:
    return True


def op_accesses(
    steps: Sequence[RoundTrip], *, is_data: Callable[[str], bool] = _is_data, reads_count: bool = True
) -> list[Access]:
    """The accesses of one operation's round trips (in order) that count (the rules above).
    `reads_count` False: the operation raised or crashed; only its writes count."""
    out: list[Access] = []
    pending: list[Access] = []  # reads inside a WATCH attempt, not yet vouched for
    watched: set[str] = set()

    def emit(acc: KeyAccess, at: tuple[int, int], lost: bool, in_attempt: bool) -> None:
        if not is_data(acc.key):
            return
        reads = acc.reads and reads_count and not lost
        if acc.writes:
            out.append(Access(steps[0].op, acc.key, reads, True, acc.commutes, at))
        elif reads:
            (pending if in_attempt else out).append(Access(steps[0].op, acc.key, True, False, False, at))

    for step in steps:
        commands = [[str(x) for x in c] for c in step.commands]
        i = 0
        while i < len(commands):
            name = commands[i][0].upper() if commands[i] else ""
            if name == "WATCH":
                watched.update(commands[i][1:])
            elif name in ("UNWATCH", "DISCARD"):
                pending, watched = [], set()
            elif name == "MULTI":
                end = next(
                    (j for j in range(i + 1, len(commands)) if commands[j][0].upper() in ("EXEC", "DISCARD")),
                    None,
                )
                block = commands[i + 1 : end]
                ran = (
                    end is not None
                    and commands[end][0].upper() == "EXEC"
                    and end < len(step.replies)
                    and isinstance(step.replies[end], list | tuple)
                )
                if ran:
                    at_exec = (step.position, end if end is not None else i)
                    for acc in pending:
                        out.append(
                            Access(
                                acc.op, acc.key, True, False, False, at_exec if acc.key in watched else acc.at
                            )
                        )
                    for j, command in enumerate(block, start=i + 1):
                        for found in accesses(command):
                            emit(found, (step.position, j), step.lost, False)
                else:
                    for command in block:
                        accesses(command)  # an unknown command is an error even where it did nothing
                pending, watched = [], set()
                i = len(commands) if end is None else end + 1
                continue
            else:
                for found in accesses(commands[i]):
                    emit(found, (step.position, i), step.lost, bool(watched))
            i += 1
        if step.lost:
            pending, watched = [], set()  # the connection dropped: the server forgot the WATCH
    return out  # reads still pending: a WATCH attempt given up on counts as nothing


def edges_of(all_accesses: Sequence[Access]) -> list[Edge]:
    """Every conflict between two operations, from the earlier access to the later."""
    by_key: dict[str, list[Access]] = defaultdict(list)
    for acc in sorted(all_accesses, key=lambda a: a.at):
        by_key[acc.key].append(acc)
    found: dict[tuple[str, str, str, str], Edge] = {}
    for key, seq in by_key.items():
        for n, x in enumerate(seq):
            for y in seq[n + 1 :]:
                if x.op == y.op:
                    continue
                if x.writes and y.writes:
                    kind = "" if (x.commutes and y.commutes) else "ww"
                elif x.writes and y.reads:
                    kind = "wr"
                elif x.reads and y.writes:
                    kind = "rw"
                else:
                    kind = ""
                if kind:
                    found.setdefault((x.op, y.op, kind, key), Edge(x.op, y.op, kind, key))
    return list(found.values())


def _shortest_path(adj: dict[str, list[Edge]], start: str, goal: str) -> list[Edge] | None:
    seen = {start}
    queue: deque[tuple[str, list[Edge]]] = deque([(start, [])])
    while queue:
        node, path = queue.popleft()
        for e in adj.get(node, []):
            if e.dst == goal:
                return [*path, e]
            if e.dst not in seen:
                seen.add(e.dst)
                queue.append((e.dst, [*path, e]))
    return None


def _shortest_cycle(edges: Sequence[Edge], through: Sequence[Edge] | None = None) -> list[Edge] | None:
    """The shortest cycle made of `edges` (that starts with one of `through`, when given)."""
    adj = _adjacency(edges)
    best: list[Edge] | None = None
    starts = through if through is not None else [e for es in adj.values() for e in es]
    for first in starts:
        rest = [first] if first.src == first.dst else None
        if rest is None and (back := _shortest_path(adj, first.dst, first.src)) is not None:
            rest = [first, *back]
        if rest is not None and (best is None or len(rest) < len(best)):
            best = rest
    return best


def find_cycle(edges: Sequence[Edge], writers: dict[str, set[str]] | None = None) -> Cycle | None:
    """The weakest anomaly among the graph's cycles (None when it has none). `writers`: for each
    operation, the keys it both read and wrote (to tell a lost update)."""
    ww = [e for e in edges if e.kind == "ww"]
    wr = [e for e in edges if e.kind == "wr"]
    rw = [e for e in edges if e.kind == "rw"]
    if cycle := _shortest_cycle(ww):
        return Cycle(G0, cycle)
    if cycle := _shortest_cycle([*ww, *wr]):
        return Cycle(G1C, cycle)
    single: list[Edge] | None = None  # a cycle with exactly one rw edge: the others ww or wr
    dependencies = _adjacency([*ww, *wr])
    for one in sorted(rw, key=lambda e: (e.src, e.dst, e.key)):
        back = _shortest_path(dependencies, one.dst, one.src)
        if back is not None and (single is None or len(back) + 1 < len(single)):
            single = [one, *back]
    if single is not None:
        key = single[0].key
        lost = (
            len(single) == 2
            and {e.key for e in single} == {key}
            and all(key in (writers or {}).get(e.src, set()) for e in single)
        )
        return Cycle(LOST_UPDATE if lost else G_SINGLE, single)
    if cycle := _shortest_cycle([*ww, *wr, *rw]):
        return Cycle(G2_ITEM, cycle)
    return None


def _adjacency(edges: Sequence[Edge]) -> dict[str, list[Edge]]:
    adj: dict[str, list[Edge]] = defaultdict(list)
    for e in sorted(edges, key=lambda e: (e.src, e.dst, e.kind, e.key)):
        adj[e.src].append(e)
    return adj


def check_serializable(
    steps: Sequence[RoundTrip],
    *,
    is_data: Callable[[str], bool] = _is_data,
    no_reads: frozenset[str] | set[str] = frozenset(),
    label: Callable[[str], str] = lambda key: key,
) -> Cycle | None:
    """The named cycle of the conflict graph of `steps` (in the server's order), or None.
    Operations in `no_reads` raised or crashed: only their writes count."""
    per_op: dict[str, list[RoundTrip]] = defaultdict(list)
    for step in steps:
        per_op[step.op].append(step)
    every: list[Access] = []
    read_write: dict[str, set[str]] = {}
    for op, own in per_op.items():
        found = op_accesses(own, is_data=is_data, reads_count=op not in no_reads)
        every.extend(found)
        read = {a.key for a in found if a.reads}
        read_write[op] = {a.key for a in found if a.writes and a.key in read} | {
            a.key for a in found if a.writes and a.reads
        }
    cycle = find_cycle(edges_of(every), read_write)
    if cycle is not None:
        cycle.label = label
    return cycle
