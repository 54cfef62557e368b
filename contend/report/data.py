"""Reading a sweep directory (`contend load`'s raw/) into one row per point, and what the rows say.

Locust's own figures (request rate, failures, p50 and p99) come from each
point's `--csv` stats file; contend's (commits, retries, lock wait and hold,
per-user commits, the invariant verdict) from its `--contend-json` summary.
A sweep over several Locust process counts (`contend load --processes 1,2,4`)
is compared count by count here; the other sections read the runs at the
largest count.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from contend.errors import ContendError
from contend.load.summary import read_summary

SWEEP_FILE = "sweep.json"
LOCK = "lock"
OPTIMISTIC = "optimistic"
SERVER = "server"
#: A process this busy (CPU time / wall time) keeps its core busy: it is the bottleneck.
BUSY = 0.9


class NotASweep(ContendError):
    """The directory given to `contend report` holds no sweep."""


@dataclass(frozen=True)
class SweepRow:
    """One point of the sweep: a workload, strategy, user count and hot-key count."""

    workload: str
    strategy: str
    kind: str
    users: int
    hot_keys: int
    ok: bool
    exit_code: int
    committed_per_s: float | None
    requests_per_s: float | None
    requests: int
    failures: int
    commits: int
    p50_ms: float | None
    p99_ms: float | None
    retries_per_commit: float | None
    round_trips_per_commit: float | None
    lock_wait_mean_ms: float | None
    lock_wait_p99_ms: float | None
    lock_hold_mean_ms: float | None
    jain_index: float | None
    ceiling_per_s: float | None
    generator_cpu: float | None = None  # mean CPU time / wall time per Locust process
    processes: int = 1  # Locust processes of the run
    server_cpu: float | None = None  # the server's CPU seconds per second of the run
    machine_cpu: float | None = None  # the busy share of all the machine's cores (anyone's processes)
    invariant_ok: bool = True
    progress_ok: bool = True  # something committed, and at most the allowed share failed
    #: The 95 % interval of committed_per_s relative to it (from the run's 0.2 s windows), and
    #: the windows it rests on; None for a run too short to tell (or recorded before it existed).
    committed_spread: float | None = None
    commit_windows: int = 0
    #: The jobs workload: end-to-end latency of completed jobs, and redeliveries per job delivered.
    latency_p50_ms: float | None = None
    latency_p99_ms: float | None = None
    redeliveries_per_job: float | None = None

    @property
    def committed_interval(self) -> tuple[float, float] | None:
        """(low, high) of the committed rate's 95 % interval, when the run gave it a spread."""
        if self.committed_per_s is None or self.committed_spread is None:
            return None
        half = self.committed_per_s * self.committed_spread
        return max(0.0, self.committed_per_s - half), self.committed_per_s + half

    @property
    def failed_share(self) -> float | None:
        """Locust's failed requests (the operation failed or raised) over all its requests."""
        return self.failures / self.requests if self.requests else None

    @property
    def why(self) -> str:
        """Why the point failed, in a few words ("" when it did not)."""
        if self.ok:
            return ""
        if not self.invariant_ok:
            return "invariant broken"
        if not self.progress_ok:
            return "nothing committed" if not self.commits else "too many failures"
        return f"Locust exited {self.exit_code}"

    @property
    def of_ceiling(self) -> float | None:
        """Committed operations per second as a fraction of the raw ceiling at the same clients."""
        if self.committed_per_s is None or not self.ceiling_per_s:
            return None
        return self.committed_per_s / self.ceiling_per_s


@dataclass
class SweepData:
    """A sweep's rows at its largest Locust process count (`rows`, what most sections show) and at
    every count (`all_rows`); the raw ceiling by clients at that count, and by (clients, processes)."""

    raw: Path
    meta: dict[str, Any]
    ceiling: dict[int, float]
    ceiling_method: str
    rows: list[SweepRow] = field(default_factory=list)
    all_rows: list[SweepRow] = field(default_factory=list)
    ceilings: dict[tuple[int, int], float] = field(default_factory=dict)
    #: The raw LPUSH/RPOP ceiling (jobs per second) by clients, at the most processes.
    job_ceiling: dict[int, float] = field(default_factory=dict)

    @property
    def process_counts(self) -> list[int]:
        return sorted({r.processes for r in self.all_rows})

    @property
    def workloads(self) -> list[str]:
        return list(dict.fromkeys(r.workload for r in self.rows))

    def strategies(self, workload: str) -> list[str]:
        return list(dict.fromkeys(r.strategy for r in self.rows if r.workload == workload))

    def hot_keys(self, workload: str | None = None) -> list[int]:
        return sorted({r.hot_keys for r in self.rows if workload is None or r.workload == workload})

    @property
    def users(self) -> list[int]:
        return sorted({r.users for r in self.rows})

    def series(self, workload: str, strategy: str, hot_keys: int) -> list[SweepRow]:
        return sorted(
            (r for r in self.rows if (r.workload, r.strategy, r.hot_keys) == (workload, strategy, hot_keys)),
            key=lambda r: r.users,
        )

    def get(self, workload: str, strategy: str, users: int, hot_keys: int) -> SweepRow | None:
        for r in self.rows:
            if (r.workload, r.strategy, r.users, r.hot_keys) == (workload, strategy, users, hot_keys):
                return r
        return None


def find_raw(path: Path) -> Path:
    """The directory holding sweep.json: `path` itself or `path`/raw; NotASweep otherwise."""
    for candidate in (path, path / "raw"):
        if (candidate / SWEEP_FILE).is_file():
            return candidate
    if not path.exists():
        raise NotASweep(f"{path} does not exist; give the directory `contend load` wrote (reports/<run>)")
    raise NotASweep(
        f"{path} is not a sweep directory: no {SWEEP_FILE} in it or in {path / 'raw'}; "
        "make one with `contend load --out DIR` and pass DIR"
    )


def load_sweep(path: Path) -> SweepData:
    """Every point of the sweep at `path` (a run directory or its raw/)."""
    raw = find_raw(path)
    try:
        meta = json.loads((raw / SWEEP_FILE).read_text())
        planned = meta.get("plan", {}).get("processes", 1)
        # Sweeps made before process counts were compared ran every point at the plan's one count.
        default = int(planned if isinstance(planned, int) else planned[0])
        # PING ceilings, and (the jobs workload's) LPUSH/RPOP ones, by clients and processes.
        by_op: dict[str, dict[tuple[int, int], float]] = {}
        for c in meta.get("ceiling", []):
            cell = (int(c["clients"]), int(c.get("processes", default)))
            by_op.setdefault(str(c.get("op", "ping")), {})[cell] = float(c["per_second"])
        ceilings = by_op.get("ping", {})
        methods = {
            c["method"].split(",")[0] for c in meta.get("ceiling", []) if c.get("op", "ping") == "ping"
        }
        points = meta["points"]
    except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
        raise NotASweep(
            f"{raw / SWEEP_FILE} is not a sweep description ({exc}); re-run `contend load`"
        ) from None
    data = SweepData(raw, meta, {}, ", ".join(sorted(methods)) or "not measured", ceilings=ceilings)
    for point in points:
        data.all_rows.append(_row(raw, point, by_op.get(str(point.get("ceiling", "ping")), {}), default))
    if not data.all_rows:
        raise NotASweep(f"{raw} holds a sweep with no finished runs yet; wait for `contend load` to finish")
    main = max(data.process_counts)
    data.rows = [r for r in data.all_rows if r.processes == main]
    data.ceiling = {c: rate for (c, procs), rate in sorted(ceilings.items()) if procs == main}
    jobs = by_op.get("lpush-rpop", {})
    data.job_ceiling = {c: rate for (c, procs), rate in sorted(jobs.items()) if procs == main}
    return data


def _row(raw: Path, point: dict[str, Any], ceilings: dict[tuple[int, int], float], default: int) -> SweepRow:
    workload, strategy = point["workload"], point["strategy"]
    processes = int(point.get("processes", default))
    run = read_summary(raw / point["summary"])
    summary = run.workloads.get(workload) if run else None
    locust: dict[str, Any] = asdict(summary.locust) if summary else {}
    stats = _csv_stats(raw / point["csv"], workload, strategy)
    if stats:
        locust.update(stats)
    figures = summary.contend if summary else {}
    requests = int(figures.get("requests") or 0)
    commits = int(figures.get("commits") or 0)
    rate = locust.get("requests_per_s")
    committed = rate * commits / requests if rate is not None and requests else None
    return SweepRow(
        workload=workload,
        strategy=strategy,
        kind=point.get("kind", ""),
        users=int(point["users"]),
        hot_keys=int(point["hot_keys"]),
        ok=bool(point.get("ok")),
        exit_code=int(point.get("exit_code", -1)),
        committed_per_s=committed,
        requests_per_s=rate,
        requests=int(locust.get("requests") or 0),
        failures=int(locust.get("failures") or 0),
        commits=commits,
        p50_ms=locust.get("p50_ms"),
        p99_ms=locust.get("p99_ms"),
        retries_per_commit=figures.get("retries_per_commit"),
        round_trips_per_commit=figures.get("round_trips_per_commit"),
        lock_wait_mean_ms=figures.get("lock_wait_mean_ms"),
        lock_wait_p99_ms=figures.get("lock_wait_p99_ms"),
        lock_hold_mean_ms=figures.get("lock_hold_mean_ms"),
        jain_index=figures.get("jain_index"),
        ceiling_per_s=ceilings.get((int(point["users"]), processes)),
        generator_cpu=point.get("generator_cpu"),
        processes=processes,
        server_cpu=point.get("server_cpu"),
        machine_cpu=point.get("machine_cpu"),
        invariant_ok=bool(point.get("invariant_ok", point.get("ok"))),
        progress_ok=bool(point.get("progress_ok", True)),
        committed_spread=figures.get("commit_rate_spread"),
        commit_windows=int(figures.get("commit_windows") or 0),
        latency_p50_ms=figures.get("latency_p50_ms"),
        latency_p99_ms=figures.get("latency_p99_ms"),
        redeliveries_per_job=figures.get("redeliveries_per_job"),
    )


def _csv_stats(path: Path, workload: str, strategy: str) -> dict[str, Any]:
    """Locust's --csv figures of the workload/strategy entry (empty when the file is missing)."""
    if not path.is_file():
        return {}
    with path.open(newline="") as f:
        for record in csv.DictReader(f):
            if record.get("Type") == workload and record.get("Name") == strategy:
                return {
                    "requests": int(record["Request Count"]),
                    "failures": int(record["Failure Count"]),
                    "requests_per_s": float(record["Requests/s"]),
                    "p50_ms": _number(record.get("50%")),
                    "p99_ms": _number(record.get("99%")),
                }
    return {}


def _number(text: str | None) -> float | None:
    try:
        return float(text) if text not in (None, "", "N/A") else None
    except ValueError:
        return None


# What the rows say ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Fractions:
    """Committed rates at one user count as fractions of the raw ceiling."""

    users: int
    watch: float | None
    lock: float | None
    server: str | None  # the fastest one-round-trip strategy there (lua, incr)
    best: float | None

    def describe(self) -> str:
        server = f" / {self.server} {_x(self.best)}" if self.server else ""
        return f"WATCH {_x(self.watch)} / lock {_x(self.lock)}{server}"


def _x(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f}×"


#: How a lock-first strategy's commit rate compares with WATCH's at one user count.
AHEAD, BEHIND, TIED = "ahead", "behind", "within noise"


def compare(mine: SweepRow, watch: SweepRow) -> str:
    """AHEAD or BEHIND when the two rates' 95 % intervals do not overlap, else TIED; without a
    spread (a run too short to have one) the rates alone decide."""
    a, b = mine.committed_interval, watch.committed_interval
    if a is None or b is None:
        assert mine.committed_per_s is not None and watch.committed_per_s is not None
        return AHEAD if mine.committed_per_s > watch.committed_per_s else BEHIND
    if a[0] > b[1]:
        return AHEAD
    return BEHIND if a[1] < b[0] else TIED


@dataclass(frozen=True)
class Crossover:
    """Where a lock-first strategy overtakes WATCH at one hot-key count."""

    workload: str
    lock: str
    hot_keys: int
    users: int | None  # the first user count from which the lock stays ahead; None: never
    always: bool  # ahead at every user count measured
    at_crossover: Fractions | None
    at_most: Fractions  # at the largest user count measured
    #: The comparison at each user count measured (AHEAD, BEHIND or TIED).
    states: tuple[tuple[int, str], ...] = ()

    def describe(self) -> str:
        tied_at = [u for u, s in self.states if s == TIED]
        tied = ", ".join(map(str, tied_at)) + (" user" if tied_at == [1] else "")
        if self.users is not None:
            text = f"from {self.users} user{'s' if self.users != 1 else ''}"
            text += " (ahead at every count)" if self.always else ""
        elif self.states and self.states[-1][1] == TIED:
            return f"within noise: the two rates' intervals overlap at {tied}{'' if tied_at == [1] else ' users'}"
        else:
            text = f"never: WATCH ahead at {self.at_most.users} users"
        if tied:
            text += f"; within noise at {tied}{'' if tied_at == [1] else ' users'}"
        return text


def crossovers(data: SweepData) -> list[Crossover]:
    """For every lock-first strategy and hot-key count: from which user count it beats WATCH by
    more than the noise (their 95 % intervals apart) at that count and every larger one."""
    found = []
    for workload in data.workloads:
        kinds = {r.strategy: r.kind for r in data.rows if r.workload == workload}
        if "watch" not in kinds:
            continue
        locks = [s for s in data.strategies(workload) if kinds[s] == LOCK]
        servers = [s for s in data.strategies(workload) if kinds[s] == SERVER]
        for hot in data.hot_keys(workload):
            watch = {r.users: r for r in data.series(workload, "watch", hot) if r.committed_per_s is not None}
            for lock in locks:
                mine = {r.users: r for r in data.series(workload, lock, hot) if r.committed_per_s is not None}
                users = sorted(u for u in mine if u in watch)
                if not users:
                    continue
                states = tuple((u, compare(mine[u], watch[u])) for u in users)
                start = next(
                    (users[i] for i in range(len(users)) if all(s == AHEAD for _, s in states[i:])), None
                )
                found.append(
                    Crossover(
                        workload,
                        lock,
                        hot,
                        start,
                        start == users[0],
                        _fractions(data, workload, lock, servers, start, hot) if start is not None else None,
                        _fractions(data, workload, lock, servers, users[-1], hot),
                        states,
                    )
                )
    return found


def _fractions(data: SweepData, workload: str, lock: str, servers: list[str], at: int, hot: int) -> Fractions:
    best = _best(data, workload, servers, at, hot)
    return Fractions(
        at,
        _of(data, workload, "watch", at, hot),
        _of(data, workload, lock, at, hot),
        best,
        _of(data, workload, best, at, hot) if best else None,
    )


def _of(data: SweepData, workload: str, strategy: str, users: int, hot: int) -> float | None:
    row = data.get(workload, strategy, users, hot)
    return row.of_ceiling if row else None


def _best(data: SweepData, workload: str, strategies: Iterable[str], users: int, hot: int) -> str | None:
    best, rate = None, -1.0
    for s in strategies:
        row = data.get(workload, s, users, hot)
        if row and row.committed_per_s is not None and row.committed_per_s > rate:
            best, rate = s, row.committed_per_s
    return best


def nearest(values: Iterable[int], wanted: int) -> int | None:
    """The value closest to `wanted` (the smaller on a tie), or None."""
    ordered = sorted(values)
    if not ordered:
        return None
    return min(ordered, key=lambda v: (abs(v - wanted), v))


# Locust process counts compared -------------------------------------------------------------
def limit(row: SweepRow, cores: int | None) -> str:
    """What limited a run by CPU: Redis's core, the Locust process(es), the machine's cores
    (busy with anything, other users' work included), or none of them."""
    if row.server_cpu is not None and row.server_cpu >= BUSY:
        return "Redis"
    if row.generator_cpu is not None and row.generator_cpu >= BUSY:
        return "one Locust process" if row.processes == 1 else "the Locust processes"
    if row.machine_cpu is not None and row.machine_cpu >= BUSY:
        return f"the machine's {cores or '?'} cores"
    return "no CPU (round trips, contention)"


def _cells(data: SweepData) -> dict[tuple[str, str, int, int], list[SweepRow]]:
    """Every (workload, strategy, users, hot keys) with its runs, fewest processes first."""
    cells: dict[tuple[str, str, int, int], list[SweepRow]] = {}
    for r in data.all_rows:
        cells.setdefault((r.workload, r.strategy, r.users, r.hot_keys), []).append(r)
    return {k: sorted(v, key=lambda r: r.processes) for k, v in cells.items()}


def _ratio(value: float | None, base: float | None) -> str:
    return "—" if value is None or not base else f"{value / base:.2f}×"


def _pct(value: float | None, processes: int = 1) -> str:
    if value is None:
        return "—"
    return f"{value:.0%}" if processes == 1 else f"{processes}×{value:.0%}"


def _processes(n: int) -> str:
    return f"{n} Locust process{'es' if n != 1 else ''}"


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:,.0f}"


def process_comparison_table(data: SweepData) -> tuple[tuple[str, ...], list[tuple[str, ...]]]:
    """Header and rows: each run's commits/s and raw ceiling beside the same point at the fewest
    Locust processes, the CPU of Locust (per process) and of Redis, and what limited it."""
    cores = data.meta.get("machine", {}).get("cores")
    base = min(data.process_counts)
    header = (
        "workload/strategy", "users · hot keys", "processes", "commits/s", f"× {base}",
        "raw ceiling/s", f"ceiling × {base}", "× ceiling", "Locust CPU", "Redis CPU", "machine CPU",
        "limit",
    )  # fmt: skip
    rows: list[tuple[str, ...]] = []
    for (w, s, u, h), runs in _cells(data).items():
        first = runs[0] if runs[0].processes == base else None
        for r in runs:
            rows.append(
                (
                    f"{w}/{s}" + ("" if r.ok else " ✗"),
                    f"{u} · {h}",
                    str(r.processes),
                    _rate(r.committed_per_s),
                    _ratio(r.committed_per_s, first.committed_per_s if first else None),
                    _rate(r.ceiling_per_s),
                    _ratio(r.ceiling_per_s, first.ceiling_per_s if first else None),
                    _x(r.of_ceiling),
                    _pct(r.generator_cpu, r.processes),
                    _pct(r.server_cpu),
                    _pct(r.machine_cpu),
                    limit(r, cores),
                )
            )
    return header, rows


#: More processes moving commits/s by this factor or more: the fewer were the limit.
ROSE = 1.1


def generator_verdicts(data: SweepData) -> list[str]:
    """One sentence per point: was the load generator at the fewest processes the limit (its CPU near
    a full core, or commits/s rising with processes, while Redis and the machine had headroom), and
    what more processes did."""
    lines = []
    for (w, s, u, h), runs in _cells(data).items():
        first, more = runs[0], runs[1:]
        lines.append(f"{w}/{s}, {u} users, {h} hot key{'s' if h != 1 else ''}: {_verdict(first, more)}")
    return lines


def _verdict(first: SweepRow, more: list[SweepRow]) -> str:
    base = first.committed_per_s
    rates = [r.committed_per_s / base for r in more if r.committed_per_s is not None and base]
    rose = max(rates, default=0.0) >= ROSE
    gen_busy = first.generator_cpu is not None and first.generator_cpu >= BUSY
    gen, server = _pct(first.generator_cpu, first.processes), _pct(first.server_cpu)
    who = "one Locust process" if first.processes == 1 else f"{first.processes} Locust processes"
    machine_busy = first.machine_cpu is not None and first.machine_cpu >= BUSY
    if first.server_cpu is not None and first.server_cpu >= BUSY:
        verdict = f"Redis was the limit (Redis {server}, Locust {gen} CPU)"
    elif machine_busy and not gen_busy:
        verdict = (
            f"the machine's cores were the limit ({_pct(first.machine_cpu)} busy with anyone's processes; "
            f"Locust {gen}, Redis {server} CPU): more processes share the same cores, so these ratios "
            "say little about Locust"
        )
    elif gen_busy or rose:
        why = [f"Locust {gen} CPU"] if gen_busy else []
        why += [f"commits/s rose up to {max(rates):.2f}× with more processes"] if rose else []
        verdict = f"{who}, not Redis, was the limit ({' and '.join(why)}; Redis {server} CPU)"
    else:
        verdict = (
            f"neither {who} nor Redis was the limit (Locust {gen}, Redis {server} CPU; "
            "more processes did not raise commits/s)"
        )
    moved = "; ".join(
        f"{_processes(r.processes)}: commits/s {_ratio(r.committed_per_s, base)}, "
        f"raw ceiling {_ratio(r.ceiling_per_s, first.ceiling_per_s)}"
        for r in more
    )
    return verdict + (f"; {moved}." if moved else ".")
