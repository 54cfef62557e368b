"""The verdict of a transaction stress run: the conflict graph of what the server ran, the audits,
the final balances.

The same three properties the transaction machine judges (contend.machines.transactions):

* serializable: no cycle in the conflict graph (contend.history.isolation) of the commands the
  server ran for each operation, in its order, as its MONITOR record shows them and
  contend.stress.attribution sorts them; each command placed by the server's own command table.
  The data are the keys the opening of each account wrote. Named for what the cycle shows: lost
  update, read skew, write skew (under an overdraft guard), G0, G1c.
* consistent-audit: every audit that returned saw the opening total and no account below zero;
* applies-once: the final balances are the opening ones plus each transfer that returned True
  once, and each of unknown outcome (info) once or not at all.

An operation of unknown outcome (info: a lost reply, a timeout) may or may not have happened:
its reads are no evidence, its writes the server ran count, and applies-once lets it go either
way. So do operations that raised (fail): their reads are no evidence. Operations in flight while
the record was cut (a server restart) are set aside: the graph does not judge them, and says how
many. A broken sum stands alone only where the graph has no cycle; a transfer of unknown outcome
that the record shows writing one of its accounts and not the other names it a money-moving crash.

A long run's graph is large: edges are drawn between accesses of a key at most REACH accesses
apart, and farther only within the span of an operation under way on the key (a subset of the
edges, so a cycle found is one of the whole graph), and cycles are looked for only inside its
strongly connected components, the smallest first; a large one by its cycles of two and three
operations.
"""

from __future__ import annotations

import re
import time
from collections import defaultdict, deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from contend.exitcodes import ExitCode
from contend.history.access import CommandTable
from contend.history.invariants import Violation
from contend.history.isolation import (
    G0,
    G1C,
    GUARDED_WRITE_SKEW,
    LOST_UPDATE,
    READ_SKEW,
    WRITE_SKEW,
    Cycle,
    Edge,
    Executed,
    RoundTrip,
    conflicts,
    edges_of,
    find_cycle,
    op_accesses,
)
from contend.history.records import Call
from contend.impl.catalog import APPLIES_ONCE, CONSISTENT_AUDIT, SERIALIZABLE
from contend.models.bank import explain_audit, explain_final
from contend.stress.attribution import Attribution, OpId
from contend.stress.bank_worker import ACCOUNTS, OPENING

#: Edges are drawn between accesses of one key at most this many accesses apart.
REACH = 64


@dataclass
class TransactionJudgement:
    """What the run's history and the server's record show."""

    violations: list[Violation] = field(default_factory=list)
    cycle: Cycle | None = None
    #: Operations the graph judged, and those set aside (in flight while the record was cut).
    judged: int = 0
    #: Conflicts (edges) between them: a graph with none judged nothing that could go wrong.
    edges: int = 0
    set_aside: int = 0
    cuts: int = 0
    #: Seconds into the load when the named cycle's operations had all ended (None: no cycle).
    caught_at: float | None = None
    #: Why serializability (or applies-once) was not judged, or not wholly: the record refused,
    #: a command the server's table cannot place on a balance, the final read failed.
    unjudged: list[str] = field(default_factory=list)
    #: What the graph was built from, in words.
    source: str = ""
    seconds: float = 0.0

    @property
    def exit_code(self) -> int:
        if self.violations:
            return ExitCode.FAILED
        return ExitCode.INCONCLUSIVE if self.unjudged else ExitCode.OK

    def summary(self) -> str:
        """One line: what the graph judged."""
        if self.cycle is not None:
            text = f"not serializable: {self.cycle.describe()}"
            if self.caught_at is not None:
                text += f"; its operations had all ended {self.caught_at:.2f} s into the load"
        elif any("record" in u and "not judged" in u for u in self.unjudged):
            return "serializability not judged: " + self.unjudged[0]
        else:
            text = f"no cycle among {self.judged} operations ({self.edges} conflicts between them)"
        if self.set_aside:
            text += (
                f"; {self.set_aside} operation(s) in flight while the record was cut ({self.cuts} cut(s)) "
                "set aside"
            )
        return f"{text} ({self.source}, {self.seconds:.2f} s)"

    def to_json(self) -> dict[str, Any]:
        return {
            "anomaly": self.cycle.anomaly if self.cycle else None,
            "cycle": self.cycle.path() if self.cycle else None,
            "judged": self.judged,
            "edges": self.edges,
            "set_aside": self.set_aside,
            "cuts": self.cuts,
            "caught_at": None if self.caught_at is None else round(self.caught_at, 3),
            "unjudged": self.unjudged,
            "source": self.source,
            "seconds": round(self.seconds, 3),
        }


def op_ids(calls: Sequence[Call]) -> dict[OpId, Call]:
    """Each client call under the id its worker's marker gives it: (process, n-th call of it)."""
    out: dict[OpId, Call] = {}
    seen: dict[Any, int] = defaultdict(int)
    for call in sorted(calls, key=lambda c: (c.start, c.id)):
        if isinstance(call.process, int):
            out[(call.process, seen[call.process])] = call
            seen[call.process] += 1
    return out


def data_keys(record: Attribution, table: CommandTable, shown: bool) -> dict[str, set[str]]:
    """Each key the opening wrote, with the accounts whose opening wrote it."""
    keys: dict[str, set[str]] = {}
    for account, ran in record.opening.items():
        for r in ran:
            for a in table.place(r.args, script_shown=shown and not r.by_script).accesses:
                if a.writes:
                    keys.setdefault(a.key, set()).add(account)
    return keys


def judge_run(
    calls: Sequence[Call],
    record: Attribution | None,
    table: CommandTable | None,
    final: dict[str, int] | None,
    *,
    source: str,
    namespace: str = "",
    why_no_record: str = "",
    budget: float = 30.0,
) -> TransactionJudgement:
    """Judge a transaction run: the graph (when there is a record), the audits, the final balances."""
    started = time.perf_counter()
    out = TransactionJudgement(source=source)
    client = [c for c in calls if isinstance(c.process, int)]
    label_of = {f"T{c.id}": c for c in client}
    steps: list[RoundTrip] = []
    keys: dict[str, set[str]] = {}
    shown = record is not None and record.shows_scripts
    if record is None or table is None:
        out.unjudged.append(f"the server's record is absent, serializability not judged: {why_no_record}")
    else:
        keys = data_keys(record, table, shown)
        if not keys:
            out.unjudged.append("the record shows no key written by the opening: serializability not judged")
        out.cuts = len(record.cuts)
        for op, call in op_ids(client).items():
            if _in_cut(call, record.cuts):
                out.set_aside += 1
                continue
            ran = record.ops.get(op)
            if not ran:
                continue
            steps.append(
                RoundTrip(
                    f"T{call.id}",
                    0,
                    (),
                    ran=[Executed(r.args, r.by_script) for _, r in ran],
                    order=[p for p, _ in ran],
                )
            )
        out.judged = len(steps)
    keys_of = {account: {k for k, a in keys.items() if account in a} for account in ACCOUNTS}
    if steps and table is not None:
        no_reads = {s.op for s in steps if label_of[s.op].status != "ok"}
        debits = {f"T{c.id}": keys_of.get(c.value[0], set()) for c in client if c.f == "transfer"}
        found = conflicts(
            steps, table, is_data=keys.__contains__, no_reads=no_reads, scripts_shown=shown, debits=debits
        )
        edges = edges_of(found.accesses, REACH)
        out.edges = len(edges)
        cycle = _first_cycle(edges, found, started + budget)
        if cycle is not None:
            cycle.label = _label(keys, namespace)
            out.cycle = cycle
            ops = sorted({e.src for e in cycle.edges}, key=lambda n: int(n[1:]))
            ends = [label_of[n].end for n in ops]
            if all(e is not None for e in ends):
                out.caught_at = (max(e for e in ends if e is not None) - min(c.start for c in client)) / 1e9
            out.violations.append(
                Violation(
                    SERIALIZABLE,
                    f"{cycle.describe()}; the operations: "
                    + ", ".join(f"{n} {label_of[n].describe(60)}" for n in ops),
                    tuple(label_of[n] for n in ops),
                )
            )
        elif found.unplaced:
            for u in {u.command: u for u in found.unplaced}.values():
                out.unjudged.append(str(u))
    opening = dict.fromkeys(ACCOUNTS, OPENING)
    crash = _crash(client, steps, table, keys, shown)
    broken = [
        (c, problem)
        for c in client
        if c.f == "balances" and c.status == "ok" and isinstance(c.output, dict)
        and (problem := explain_audit(opening, {str(k): int(v) for k, v in c.output.items()}))
    ]  # fmt: skip
    if broken:
        c, problem = broken[0]
        more = f" (and {len(broken) - 1} more audit(s))" if len(broken) > 1 else ""
        out.violations.append(Violation(CONSISTENT_AUDIT, f"{crash}{problem}{more}", (c,)))
    if final is None:
        out.unjudged.append("the final balances could not be read: applies-once not judged")
    else:
        done = [tuple(c.value) for c in client if c.f == "transfer" and c.status == "ok" and c.output is True]
        maybe = [tuple(c.value) for c in client if c.f == "transfer" and c.status == "info"]
        if problem := explain_final(opening, done, maybe, final):  # type: ignore[arg-type]
            out.violations.append(Violation(APPLIES_ONCE, f"{crash}{problem}", ()))
    out.seconds = time.perf_counter() - started
    return out


def _in_cut(call: Call, cuts: Sequence[tuple[int, int]]) -> bool:
    """Was `call` in flight while the record was cut?"""
    for start, end in cuts:
        stop = call.end if call.end is not None else float("inf")
        if call.start < (end or float("inf")) and stop > start:
            return True
    return False


def _label(keys: dict[str, set[str]], namespace: str) -> Any:
    """A key as the evidence shows it: without the run's namespace and hash tags (acct:a), its end
    (the account) kept."""

    def label(key: str) -> str:
        at = key.find(namespace) if namespace else -1
        short = key[at + len(namespace) :] if at >= 0 else key
        short = re.sub(r"\{[^}]*\}", "", short).strip(":./{}|#")
        return short or key

    return label


#: A component of at most this many operations is searched whole (find_cycle's shortest cycles);
#: a larger one by its cycles of two and three operations first.
WHOLE = 40


def _first_cycle(edges: list[Edge], found: Any, deadline: float) -> Cycle | None:
    """The weakest named cycle found inside the graph's strongly connected components, the smallest
    first, until `deadline` (perf_counter).

    A large component (a paused worker's operation joins hundreds) is not searched whole, which
    costs the square of its edges: its cycles through two operations, then three, each named on
    the edges among its operations; failing those, one shortest cycle, named so."""
    components = sorted(_components(edges), key=lambda c: (len(c), min(int(op[1:]) for op in c)))
    where = {op: n for n, members in enumerate(components) for op in members}
    inside: dict[int, list[Edge]] = defaultdict(list)
    for e in edges:
        if (n := where.get(e.src)) is not None and where.get(e.dst) == n:
            inside[n].append(e)
    best: Cycle | None = None
    for n, members in enumerate(components):
        own = inside[n]
        candidates = [own] if len(members) <= WHOLE else _short_cycles(own)
        for subset in candidates:
            cycle = find_cycle(subset, found.read_write, found.guards)
            if cycle is not None and (
                best is None or _WEAKEST.index(cycle.anomaly) < _WEAKEST.index(best.anomaly)
            ):
                best = cycle
            if best is not None and (best.anomaly == G0 or time.perf_counter() > deadline):
                return best
    return best


def _short_cycles(edges: Sequence[Edge]) -> Iterator[list[Edge]]:
    """The edges among the operations of each cycle of two operations, then of three; if there is
    none, among those of one shortest cycle (a strongly connected component has one)."""
    between: dict[tuple[str, str], list[Edge]] = defaultdict(list)
    out: dict[str, set[str]] = defaultdict(set)
    for e in edges:
        between[(e.src, e.dst)].append(e)
        out[e.src].add(e.dst)

    def among(ops: Sequence[str]) -> list[Edge]:
        return [e for a in ops for b in ops if a != b for e in between.get((a, b), [])]

    seen: set[frozenset[str]] = set()
    for u, v in list(between):
        if u < v and (v, u) in between:
            seen.add(frozenset((u, v)))
            yield among((u, v))
    if seen:
        return
    for u, v in list(between):
        for w in out.get(v, ()):
            if w != u and (w, u) in between and (trio := frozenset((u, v, w))) not in seen:
                seen.add(trio)
                yield among((u, v, w))
    if seen:
        return
    first = edges[0]
    back = _path(out, first.dst, first.src)
    if back is not None:
        yield among([first.src, *back])


def _path(out: dict[str, set[str]], start: str, goal: str) -> list[str] | None:
    """The operations of a shortest path from `start` to `goal` (breadth first), `goal` excluded."""
    previous: dict[str, str | None] = {start: None}
    queue = deque([start])
    while queue:
        node = queue.popleft()
        if node == goal:
            path, at = [], previous[node]
            while at is not None:
                path.append(at)
                at = previous[at]
            return path[::-1]
        for nxt in sorted(out.get(node, ())):
            if nxt not in previous:
                previous[nxt] = node
                queue.append(nxt)
    return None


_WEAKEST = [G0, G1C, LOST_UPDATE, READ_SKEW, GUARDED_WRITE_SKEW, WRITE_SKEW]


def _components(edges: Sequence[Edge]) -> list[set[str]]:
    """The strongly connected components of more than one operation (Tarjan's, without recursion)."""
    adj: dict[str, list[str]] = defaultdict(list)
    for e in edges:
        adj[e.src].append(e.dst)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    out: list[set[str]] = []
    counter = 0
    for root in list(adj):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            node, i = work.pop()
            if i == 0:
                index[node] = low[node] = counter
                counter += 1
                stack.append(node)
                on_stack.add(node)
            targets = adj.get(node, [])
            if i < len(targets):
                work.append((node, i + 1))
                nxt = targets[i]
                if nxt not in index:
                    work.append((nxt, 0))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            if low[node] == index[node]:
                members = set()
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    members.add(top)
                    if top == node:
                        break
                if len(members) > 1:
                    out.append(members)
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[node])
    return out


def _crash(
    calls: Sequence[Call],
    steps: Sequence[RoundTrip],
    table: CommandTable | None,
    keys: dict[str, set[str]],
    shown: bool,
) -> str:
    """'money-moving crash: ...; ' when a transfer of unknown outcome wrote one of its accounts and
    not the other (as the server's record shows), else ''."""
    if table is None:
        return ""
    by_op = {s.op: s for s in steps}
    for c in calls:
        step = by_op.get(f"T{c.id}")
        if c.f != "transfer" or c.status != "info" or step is None:
            continue
        src, dst = c.value[0], c.value[1]
        src_keys = {k for k, a in keys.items() if src in a}
        dst_keys = {k for k, a in keys.items() if dst in a}
        wrote = {
            a.key
            for a in op_accesses([step], table, is_data=keys.__contains__, scripts_shown=shown)
            if a.writes
        }
        if src_keys & dst_keys or not wrote & (src_keys | dst_keys):
            continue
        if bool(wrote & src_keys) != bool(wrote & dst_keys):
            done, undone = (src, dst) if wrote & src_keys else (dst, src)
            return (
                f"money-moving crash: {c.describe(60)} [{c.where()}] ended with its outcome unknown after the "
                f"server ran its write to {done} and before any to {undone}; "
            )
    return ""
