"""Serializability from the order the server ran the commands: the conflict graph and its cycles.

Under contend's scheduler the server runs one round trip at a time, so the
order of every command is known; nothing has to be inferred (as Elle must from
a database's history). What each round trip did is what the server ran for it
(its record, contend.servers.record: the commands a script ran, a MULTI/EXEC
block only if EXEC ran it), each command placed by the server's own command
table (contend.history.access). Each operation (a user-level call such as
`transfer()`) is a node; two operations conflict when they touch a key and one
of them writes it, and the edge points from the earlier access to the later one:

* ww: both write (two increments commute: no edge; nor does an increment with a
  read of the key's existence, type or TTL);
* wr: the later reads what the earlier wrote;
* rw: the later overwrites what the earlier read (an anti-dependency).

A MULTI/EXEC block and a script are one step. An attempt whose EXEC aborted
counts as nothing, its reads since WATCH included, and so does a WATCH attempt
the code gave up on (no EXEC). A successful EXEC vouches that the keys WATCHed
did not change since WATCH, so reads of them count as made at the EXEC. A read
whose reply was lost, or made by an operation that raised or crashed, is no
evidence (its writes, which the server ran, still count), and a lost reply ends
a WATCH attempt (the connection dropped, and the server forgot the WATCH).

A cycle means no serial order explains what happened; it is named for what it
shows, weakest first, with Adya's class as Elle names it: G0 (only ww), G1c (ww
and wr), a lost update (G-single: two operations read one key and both
overwrote it), read skew (G-single: any other cycle with exactly one rw), write
skew under an overdraft guard (G2-item: rw edges on one key between operations
that each read it and then changed it by increments only, as a balance checked
and then debited), write skew (G2-item: two or more rw).

A command the server's table cannot place makes the graph incomplete only where
it touched data: `Judgement.unplaced` names it, and a cycle found without it
still stands (an access can only add edges).
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from contend.history.access import CommandTable, KeyAccess, Placement, UnknownCommand

#: The anomalies, weakest first (the one reported when a graph has several), by the names the
#: evidence gives them.
G0, G1C, LOST_UPDATE, READ_SKEW = "G0", "G1c", "lost update", "read skew"
WRITE_SKEW, GUARDED_WRITE_SKEW = "write skew", "write skew under an overdraft guard"
#: Adya's names of the same (Elle's).
G_SINGLE, G2_ITEM = "G-single", "G2-item"
ADYA: dict[str, str] = {
    G0: G0,
    G1C: G1C,
    LOST_UPDATE: G_SINGLE,
    READ_SKEW: G_SINGLE,
    WRITE_SKEW: G2_ITEM,
    GUARDED_WRITE_SKEW: G2_ITEM,
}
#: What each is in the words of a bank.
ANOMALY_WORDS: dict[str, str] = {
    G0: "write cycle: two operations' writes interleaved",
    G1C: "circular information flow: each operation saw the other's writes",
    LOST_UPDATE: "two operations read one value and both overwrote it: one update is lost",
    READ_SKEW: "an operation saw part of another's writes and not the rest",
    WRITE_SKEW: "operations each read what the other then wrote",
    GUARDED_WRITE_SKEW: (
        "each operation checked a balance before another debited it, and debited it too: "
        "the check guarded nothing"
    ),
}


@dataclass(frozen=True)
class Executed:
    """A command the server executed (its record): `by_script` when a script ran it."""

    args: tuple[str, ...]
    by_script: bool = False


@dataclass(frozen=True)
class RoundTrip:
    """One step of the server's order: operation `op` sent `commands` and the server answered `replies`."""

    op: str
    position: int
    commands: Sequence[Sequence[Any]]
    replies: Sequence[Any] = ()
    #: The server ran it but the reply never reached the client.
    lost: bool = False
    #: What the server ran for it, in its order (its record: a script's commands included, a
    #: MULTI/EXEC block's only if EXEC ran it); None: no record, `commands` stand in.
    ran: Sequence[Executed] | None = None
    #: The place in the server's order of each command of `ran` (a stress run's record, where one
    #: operation's commands lie among other operations'); None: all at `position`, in turn.
    order: Sequence[int] | None = None

    def at(self, index: int) -> tuple[int, int]:
        """Where command `index` of this round trip ran, in the server's order."""
        return (self.order[index], 0) if self.order is not None else (self.position, index)


@dataclass(frozen=True)
class Access:
    op: str
    key: str
    reads: bool
    writes: bool
    commutes: bool
    at: tuple[int, int]  # (position, index within the round trip)
    metadata: bool = False  # a read of existence, type or TTL only: it commutes with increments


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
        adya = ADYA[self.anomaly]
        named = self.anomaly if adya == self.anomaly else f"{self.anomaly} ({adya})"
        return f"{named}: {ANOMALY_WORDS[self.anomaly]}: {self.path()}"


@dataclass
class Judgement:
    """The conflict graph's verdict: its named cycle (None: there is none), and the commands the
    server's table could not place that touched data (then no cycle does not mean serializable)."""

    cycle: Cycle | None
    unplaced: list[UnknownCommand] = field(default_factory=list)


def _is_data(key: str) -> bool:
    return True


@dataclass
class _Item:
    """One command of a round trip, as the graph reads it."""

    args: list[str]
    by_script: bool
    index: int
    exec_ok: bool | None = None  # for an EXEC: did it run its block (None: not known)


def _items(step: RoundTrip) -> list[_Item]:
    """The commands of a round trip in the server's order: its record's, or what it sent."""
    execs = [
        isinstance(step.replies[j], list | tuple) if j < len(step.replies) else None
        for j, c in enumerate(step.commands)
        if c and str(c[0]).upper() == "EXEC"
    ]
    if step.ran is None:
        commands = [[str(x) for x in c] for c in step.commands if c]
        items = [_Item(c, False, i) for i, c in enumerate(commands)]
    else:
        items = [_Item(list(r.args), r.by_script, i) for i, r in enumerate(step.ran) if r.args]
    for item in items:
        if item.args[0].upper() == "EXEC" and not item.by_script:
            item.exec_ok = execs.pop(0) if execs else None
    return items


def op_accesses(
    steps: Sequence[RoundTrip],
    table: CommandTable,
    *,
    is_data: Callable[[str], bool] = _is_data,
    reads_count: bool = True,
    unplaced: list[UnknownCommand] | None = None,
    scripts_shown: bool = True,
) -> list[Access]:
    """The accesses of one operation's round trips (in order) that count (the rules above).
    `reads_count` False: the operation raised or crashed; only its writes count. Commands the
    table cannot place that touched data (or may have: their keys unknown, a data key among their
    arguments) are added to `unplaced`. `scripts_shown`: the record shows the commands scripts run
    (else a script's own keys stand in for them)."""
    out: list[Access] = []
    pending: list[Access] = []  # reads inside a WATCH attempt, not yet vouched for
    watched: set[str] = set()

    def place(item: _Item, at: tuple[int, int], lost: bool, in_attempt: bool, shown: bool) -> None:
        found: Placement = table.place(item.args, script_shown=shown)
        if found.unplaced:
            named = found.keys if found.keys is not None else item.args[1:]
            touched = [k for k in named if is_data(k)]
            if touched and unplaced is not None:
                unplaced.append(UnknownCommand(item.args[0].upper(), found.unplaced, touched))
            return
        for acc in found.accesses:
            emit(acc, at, lost, in_attempt)

    def emit(acc: KeyAccess, at: tuple[int, int], lost: bool, in_attempt: bool) -> None:
        if not is_data(acc.key):
            return
        reads = acc.reads and reads_count and not lost
        if acc.writes:
            out.append(Access(steps[0].op, acc.key, reads, True, acc.commutes, at))
        elif reads:
            read = Access(steps[0].op, acc.key, True, False, False, at, acc.metadata)
            (pending if in_attempt else out).append(read)

    for step in steps:
        items = _items(step)
        shown = step.ran is not None and scripts_shown
        i = 0
        while i < len(items):
            item = items[i]
            name = item.args[0].upper()
            at = step.at(item.index)
            if item.by_script:
                place(item, at, step.lost, bool(watched), shown)
            elif name == "WATCH":
                watched.update(item.args[1:])
            elif name in ("UNWATCH", "DISCARD"):
                pending, watched = [], set()
            elif name == "MULTI":
                end = next(
                    (j for j in range(i + 1, len(items))
                     if not items[j].by_script and items[j].args[0].upper() in ("EXEC", "DISCARD")),
                    None,
                )  # fmt: skip
                block = items[i + 1 : end]
                ran = end is not None and items[end].args[0].upper() == "EXEC"
                if ran and end is not None:
                    ok = items[end].exec_ok
                    ran = ok if ok is not None else bool(block)
                if ran and end is not None:
                    at_exec = step.at(items[end].index)
                    for acc in pending:
                        vouched = at_exec if acc.key in watched else acc.at
                        out.append(Access(acc.op, acc.key, True, False, False, vouched, acc.metadata))
                    for inner in block:
                        place(inner, step.at(inner.index), step.lost, False, shown)
                pending, watched = [], set()
                i = len(items) if end is None else end + 1
                continue
            else:
                place(item, at, step.lost, bool(watched), shown)
            i += 1
        if step.lost:
            pending, watched = [], set()  # the connection dropped: the server forgot the WATCH
    return out  # reads still pending: a WATCH attempt given up on counts as nothing


def edges_of(all_accesses: Sequence[Access], reach: int | None = None) -> list[Edge]:
    """Every conflict between two operations, from the earlier access to the later.

    With `reach` (a stress run's long history), only between accesses of a key at most `reach`
    apart among that key's accesses, or farther apart where one operation was under way on the
    key at the other's access (it had touched the key before it and touches it again after: a
    paused worker's read and its late write). A subset of the edges: a cycle found is one of the
    whole graph."""
    by_key: dict[str, list[Access]] = defaultdict(list)
    for acc in sorted(all_accesses, key=lambda a: a.at):
        by_key[acc.key].append(acc)
    found: dict[tuple[str, str, str, str], Edge] = {}
    for key, seq in by_key.items():
        items = [(a.op, a.reads, a.writes, a.commutes, a.metadata) for a in seq]
        count = len(items)
        pairs: Iterable[tuple[int, int]] = (
            ((n, m) for n in range(count) for m in range(n + 1, count))
            if reach is None
            else _near_pairs(items, reach)
        )
        for n, m in pairs:
            xop, x_reads, x_writes, x_commutes, x_metadata = items[n]
            yop, y_reads, y_writes, y_commutes, y_metadata = items[m]
            if xop == yop:
                continue
            if x_writes and y_writes:
                kind = "" if (x_commutes and y_commutes) else "ww"
            elif x_writes and y_reads:
                kind = "" if (y_metadata and x_commutes) else "wr"
            elif x_reads and y_writes:
                kind = "" if (x_metadata and y_commutes) else "rw"
            else:
                continue
            if kind and (xop, yop, kind, key) not in found:
                found[(xop, yop, kind, key)] = Edge(xop, yop, kind, key)
    return list(found.values())


def _near_pairs(items: Sequence[tuple[Any, ...]], reach: int) -> Iterator[tuple[int, int]]:
    """The index pairs (earlier, later) of one key's accesses that `edges_of` looks at under
    `reach`: those at most `reach` apart, and those farther apart within the span of an operation
    that touches the key at one end (its first access on the key before the other end, or its
    last after it)."""
    count = len(items)
    for n in range(count):
        for m in range(n + 1, min(count, n + 1 + reach)):
            yield n, m
    first: dict[Any, int] = {}
    last: dict[Any, int] = {}
    for n, item in enumerate(items):
        first.setdefault(item[0], n)
        last[item[0]] = n
    far: set[tuple[int, int]] = set()
    for n, item in enumerate(items):
        op = item[0]
        if last[op] - first[op] <= reach:
            continue
        # `op` is under way from first[op] to last[op]: pair this access with every access of its
        # span beyond reach (the near ones are paired above).
        far.update((n, m) for m in range(n + reach + 1, last[op] + 1))
        far.update((i, n) for i in range(first[op], n - reach))
    yield from sorted(far)


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


def find_cycle(
    edges: Sequence[Edge],
    writers: dict[str, set[str]] | None = None,
    guards: dict[str, set[str]] | None = None,
) -> Cycle | None:
    """The weakest anomaly among the graph's cycles (None when it has none). `writers`: for each
    operation, the keys it both read and wrote (to tell a lost update); `guards`: the keys it read
    and then changed by increments only (to tell write skew under a guard)."""
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
        return Cycle(LOST_UPDATE if lost else READ_SKEW, single)
    guarded: list[Edge] | None = None  # rw edges on one key, between operations that guard it
    for key in sorted({e.key for e in rw}):
        on_key = [
            e for e in rw
            if e.key == key and all(key in (guards or {}).get(op, set()) for op in (e.src, e.dst))
        ]  # fmt: skip
        found = _shortest_cycle(on_key)
        if found is not None and (guarded is None or len(found) < len(guarded)):
            guarded = found
    if guarded is not None:
        return Cycle(GUARDED_WRITE_SKEW, guarded)
    if cycle := _shortest_cycle([*ww, *wr, *rw]):
        return Cycle(WRITE_SKEW, cycle)
    return None


def _adjacency(edges: Sequence[Edge]) -> dict[str, list[Edge]]:
    adj: dict[str, list[Edge]] = defaultdict(list)
    for e in sorted(edges, key=lambda e: (e.src, e.dst, e.kind, e.key)):
        adj[e.src].append(e)
    return adj


@dataclass
class Conflicts:
    """What the graph is built from: every access that counts, for each operation the keys it read
    and wrote (`read_write`) and those it read and then changed by increments only (`guards`), and
    the commands the table could not place that touched data."""

    accesses: list[Access]
    read_write: dict[str, set[str]]
    guards: dict[str, set[str]]
    unplaced: list[UnknownCommand]


def conflicts(
    steps: Sequence[RoundTrip],
    table: CommandTable,
    *,
    is_data: Callable[[str], bool] = _is_data,
    no_reads: frozenset[str] | set[str] = frozenset(),
    scripts_shown: bool = True,
    debits: dict[str, set[str]] | None = None,
) -> Conflicts:
    """The accesses of `steps` (in the server's order) that count, per the rules above (`judge`
    says what the arguments are)."""
    per_op: dict[str, list[RoundTrip]] = defaultdict(list)
    for step in steps:
        per_op[step.op].append(step)
    every: list[Access] = []
    read_write: dict[str, set[str]] = {}
    guards: dict[str, set[str]] = {}
    unplaced: list[UnknownCommand] = []
    for op, own in per_op.items():
        found = op_accesses(
            own,
            table,
            is_data=is_data,
            reads_count=op not in no_reads,
            unplaced=unplaced,
            scripts_shown=scripts_shown,
        )
        every.extend(found)
        read = {a.key for a in found if a.reads}
        read_write[op] = {a.key for a in found if a.writes and a.key in read} | {
            a.key for a in found if a.writes and a.reads
        }
        changed = {a.key for a in found if a.writes}
        overwritten = {a.key for a in found if a.writes and not a.commutes}
        guards[op] = (read & changed & (debits or {}).get(op, set())) - overwritten
    return Conflicts(every, read_write, guards, unplaced)


def judge(
    steps: Sequence[RoundTrip],
    table: CommandTable,
    *,
    is_data: Callable[[str], bool] = _is_data,
    no_reads: frozenset[str] | set[str] = frozenset(),
    label: Callable[[str], str] = lambda key: key,
    scripts_shown: bool = True,
    debits: dict[str, set[str]] | None = None,
) -> Judgement:
    """The conflict graph of `steps` (in the server's order): its named cycle, and the commands the
    table could not place that touched data. Operations in `no_reads` raised or crashed: only their
    writes count. `debits`: the keys each operation takes money from (a transfer's source), the
    balances an overdraft guard checks. A cycle stands whatever the unplaced commands did
    (accesses only add edges)."""
    found = conflicts(
        steps, table, is_data=is_data, no_reads=no_reads, scripts_shown=scripts_shown, debits=debits
    )
    cycle = find_cycle(edges_of(found.accesses), found.read_write, found.guards)
    if cycle is not None:
        cycle.label = label
    return Judgement(cycle, found.unplaced)


def check_serializable(
    steps: Sequence[RoundTrip],
    table: CommandTable,
    *,
    is_data: Callable[[str], bool] = _is_data,
    no_reads: frozenset[str] | set[str] = frozenset(),
    label: Callable[[str], str] = lambda key: key,
    scripts_shown: bool = True,
) -> Cycle | None:
    """The named cycle of the conflict graph of `steps`, or None; UnknownCommand (naming it) when
    there is none but a command the table could not place touched data."""
    found = judge(steps, table, is_data=is_data, no_reads=no_reads, label=label, scripts_shown=scripts_shown)
    if found.cycle is None and found.unplaced:
        raise found.unplaced[0]
    return found.cycle
