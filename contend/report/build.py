"""The contention report: from a sweep directory to index.html, report.md, PNG plots and points.csv.

`build_report(sweep_dir, out)` reads what `contend load` wrote (data.py),
draws the plots (plots.py) and writes the same content twice (render.py):
report.md for a CI step summary, index.html with the plots embedded.
"""

from __future__ import annotations

import contextlib
import csv
import datetime as dt
from dataclasses import dataclass
from pathlib import Path

from contend.load.metrics import MAX_FAILED_SHARE, WINDOW
from contend.load.workloads import WORKLOADS
from contend.report import plots
from contend.report.data import (
    BUSY,
    ROSE,
    SERVER,
    Crossover,
    NotASweep,
    SweepData,
    SweepRow,
    _x,
    crossovers,
    find_raw,
    generator_verdicts,
    load_sweep,
    nearest,
    process_comparison_table,
)
from contend.report.render import Block, Heading, Image, Para, Table, html_page, markdown

__all__ = ["Built", "NotASweep", "build_report", "crossovers", "load_sweep"]

#: The point the issue asks about: this many users on one hot key.
FOCUS_USERS = 16


@dataclass(frozen=True)
class Built:
    html: Path
    markdown: Path
    plots: list[Path]
    points: Path
    data: SweepData
    #: The report as text only, for a CI step summary (which cannot show the plots).
    summary: str = ""


def build_report(sweep_dir: Path, out: Path | None = None) -> Built:
    """Write the report of the sweep at `sweep_dir` (a run directory or its raw/) into `out`."""
    raw = find_raw(sweep_dir)
    data = load_sweep(raw)
    dest = out or (raw.parent if raw.name == "raw" else raw)
    dest.mkdir(parents=True, exist_ok=True)
    made = plots.all_plots(data, dest)
    blocks = report_blocks(data, made, dest)
    title = f"Contention report: {dest.resolve().name}"
    index = dest / "index.html"
    index.write_text(html_page(title, blocks))
    md = dest / "report.md"
    md.write_text(markdown(blocks))
    points = write_points(data, dest / "points.csv")
    summary = markdown(blocks, images=False)
    return Built(index, md, [p for ps in made.values() for p in ps], points, data, summary)


def _fmt(value: float | None, spec: str = ".2f", suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def _ms(value: float | None) -> str:
    """Milliseconds to 3 significant digits (microseconds below 1 ms)."""
    if value is None:
        return "—"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def setting_lines(data: SweepData) -> list[Block]:
    meta, m, server = data.meta, data.meta.get("machine", {}), data.meta.get("server", {})
    plan = meta.get("plan", {})
    when = meta.get("started", "")
    with contextlib.suppress(ValueError):
        when = dt.datetime.fromisoformat(when).strftime("%Y-%m-%d %H:%M UTC")
    counts = data.process_counts
    procs = counts[0] if len(counts) == 1 else "/".join(map(str, counts))
    runs = len(data.all_rows)
    made = (
        f"Made {when} with `{meta.get('command', 'contend load')}` on a {m.get('cores', '?')}-core "
        f"{m.get('cpu', '?')} ({m.get('os', '')}), {server.get('product', 'Redis')} "
        f"{server.get('version', '?')} ({server.get('description', '')}), Locust {m.get('locust', '?')}, "
        f"redis-py {m.get('redis-py', '?')}, Python {m.get('python', '?')}: {runs} runs of "
        f"{plan.get('seconds', '?')} s, {procs} Locust process{'es' if procs != 1 else ''} each."
    )
    if len(counts) > 1:
        made += (
            f" Every point ran at {', '.join(map(str, counts))} Locust processes; the sections other than "
            f"“Locust processes” show the {counts[-1]}-process runs."
        )
    how = (
        "Every user is one client on its own connection, running one operation after another with no "
        "think time. A rate is committed operations per second (Locust's request rate × the share that "
        "committed); **× ceiling** divides it by the raw round-trip rate at the same number of clients, "
        f"measured in the same run ({data.ceiling_method}). Retries are aborted EXECs for WATCH and "
        "failed lock attempts for lock-first; latency is Locust's, at microsecond resolution; lock wait "
        "and hold are means per operation; fairness is Jain's index over per-user commit counts (1: all "
        "equal, 1/n: one user got everything)."
    )
    return [Para(made), Para(how)]


def crossover_table(found: list[Crossover]) -> Table:
    rows = []
    for c in found:
        rows.append(
            (
                c.workload,
                c.lock,
                str(c.hot_keys),
                c.describe(),
                c.at_crossover.describe() if c.at_crossover else "—",
                f"{c.at_most.users} users: {c.at_most.describe()}",
            )
        )
    return Table(
        (
            "workload",
            "lock-first",
            "hot keys",
            "overtakes WATCH",
            "× ceiling there",
            "× ceiling at the most users",
        ),
        tuple(rows),
    )


def focus_table(data: SweepData) -> tuple[int | None, int | None, Table]:
    """Every strategy at 16 users (or the nearest count measured) on 1 hot key (or the fewest)."""
    users = nearest(data.users, FOCUS_USERS)
    hot = min(data.hot_keys(), default=None)
    rows = []
    for workload in data.workloads:
        servers = [r for r in data.rows if r.workload == workload and r.kind == SERVER]
        best = max(
            (
                r.committed_per_s
                for r in servers
                if (r.users, r.hot_keys) == (users, hot) and r.committed_per_s
            ),
            default=None,
        )
        for strategy in data.strategies(workload):
            r = data.get(workload, strategy, users or 0, hot or 0)
            if r is None:
                continue
            rows.append(
                (
                    workload,
                    strategy + ("" if r.ok else " ✗"),
                    _fmt(r.committed_per_s, ",.0f"),
                    _spread(r.committed_spread),
                    _pct(r.failed_share),
                    _x(r.of_ceiling),
                    _x(r.committed_per_s / best if best and r.committed_per_s is not None else None),
                    _fmt(r.retries_per_commit),
                    _ms(r.p50_ms),
                    _ms(r.p99_ms),
                    _ms(r.lock_wait_mean_ms),
                    _fmt(r.round_trips_per_commit, ".1f"),
                    _fmt(r.jain_index, ".3f"),
                    _fmt(r.generator_cpu * 100 if r.generator_cpu is not None else None, ".0f", "%"),
                )
            )
    table = Table(
        (
            "workload",
            "strategy",
            "commits/s",
            "± (95 %)",
            "failed",
            "× ceiling",
            "× best one-round-trip",
            "retries/commit",
            "p50 ms",
            "p99 ms",
            "lock wait ms",
            "round trips/commit",
            "Jain",
            "client CPU",
        ),
        tuple(rows),
        "llrrrrrrrrrrrr",
    )
    return users, hot, table


def _spread(spread: float | None) -> str:
    """The committed rate's 95 % interval as ± a share of it; — for a run too short to tell."""
    return "—" if spread is None else f"±{spread:.0%}"


def report_blocks(data: SweepData, made: dict[str, list[Path]], dest: Path) -> list[Block]:
    blocks: list[Block] = [Heading(f"Contention report: {dest.resolve().name}", 1), *setting_lines(data)]
    ceiling = ", ".join(
        f"{u} client{'s' if u != 1 else ''} {r:,.0f}/s" for u, r in sorted(data.ceiling.items())
    )
    counts = data.process_counts
    at = f" ({counts[-1]} processes of redis-py PING loops)" if len(counts) > 1 else ""
    if ceiling or not data.job_ceiling:  # a jobs-only sweep measures the LPUSH/RPOP one alone
        blocks.append(Para(f"Raw ceiling{at}: {ceiling or 'not measured'}."))

    blocks += process_blocks(data)
    blocks += queue_blocks(data)

    found = crossovers(data)
    if found:
        blocks.append(Heading("Where lock-first overtakes WATCH"))
        blocks.append(
            Para(
                "The first user count from which the lock-first strategy commits more per second than "
                "WATCH by more than the noise (the two rates' 95 % intervals apart, each from the "
                f"commits of every {WINDOW:g} s of its run) at that count and every larger one; "
                '"within noise" where they overlap, so no crossover is named on a difference a '
                "rerun could reverse. And how far both, and the fastest one-round-trip strategy (Lua "
                "or INCR), stay below the raw ceiling there and at the largest user count. The "
                "intervals say how steady each run was; runs measured minutes apart on a busy "
                "machine can differ by more."
            )
        )
        blocks.append(crossover_table(found))

    users, hot, focus = focus_table(data)
    if focus.rows:
        blocks.append(Heading(f"{users} users on {hot} hot key{'s' if hot != 1 else ''}"))
        ceiling_at = data.ceiling.get(users or 0)
        blocks.append(
            Para(
                f"Each strategy as a fraction of the raw ceiling at {users} clients "
                f"({_fmt(ceiling_at, ',.0f')} round trips/s) and of the fastest one-round-trip strategy of "
                "its workload."
            )
        )
        blocks.append(focus)

    busy = [r for r in data.rows if r.generator_cpu is not None and r.generator_cpu >= BUSY]
    measured = [r for r in data.rows if r.generator_cpu is not None]
    if measured:
        blocks.append(
            Para(
                f"**client CPU** is the load generator's CPU time over wall time (mean per Locust process). "
                f"It was {BUSY:.0%} or more in {len(busy)} of {len(measured)} runs: there the client, not "
                "Redis, limits the rate, and a strategy's cost is mostly its round trips per commit. Give "
                "Locust more cores (`--processes`) to move the bottleneck to the server."
            )
        )

    broken = [r for r in data.all_rows if not r.ok]
    blocks.append(Heading("Invariants"))
    if broken:
        blocks.append(Para(f"**{len(broken)} of {len(data.all_rows)} runs failed** (✗ in the plots):"))
        blocks.append(
            Table(
                ("workload", "strategy", "users", "hot keys", "processes", "why", "commits", "failed"),
                tuple(
                    (
                        r.workload,
                        r.strategy,
                        str(r.users),
                        str(r.hot_keys),
                        str(r.processes),
                        r.why,
                        str(r.commits),
                        f"{r.failures} ({_pct(r.failed_share)})",
                    )
                    for r in broken
                ),
            )
        )
    else:
        blocks.append(
            Para(
                f"All {len(data.all_rows)} runs kept their invariant (counters equal the successful "
                "increments, transfers conserve the total, registry ids unique and gap-free, rate limiters "
                "within their limit over the run, queues lose no job and complete none twice) and "
                "committed operations; a run fails when it commits nothing, or when more than "
                f"{_pct(data.meta.get('plan', {}).get('max_failed_share', MAX_FAILED_SHARE))} of its "
                "operations fail (`--max-failed-share`)."
            )
        )
    failing = [r for r in data.rows if r.failures]
    if failing:
        blocks.append(
            Para(
                "Failed operations (gave up after the retries or the lock timeout, or raised), per "
                "strategy over the whole sweep: "
                + " · ".join(_failures_of(data, workload, strategy) for workload, strategy in _pairs(failing))
                + "."
            )
        )

    for workload in data.workloads:
        known = WORKLOADS.get(workload)
        blocks.append(Heading(f"{workload}: {known.summary}" if known else workload))
        if known:
            all_known = known.strategies(include_known_bad=True)
            lines = [f"`{s}`: {all_known[s].summary}" for s in data.strategies(workload) if s in all_known]
            blocks.append(Para(" · ".join(lines)))
        for path in made.get(workload, []):
            blocks.append(Image(path, path.stem))
    return blocks


def queue_blocks(data: SweepData) -> list[Block]:
    """The jobs workload: jobs per second against the raw LPUSH/RPOP ceiling at as many clients,
    end-to-end latency and redeliveries per job, by queue and users."""
    rows = sorted(
        (r for r in data.rows if r.workload == "jobs"), key=lambda r: (r.strategy, r.hot_keys, r.users)
    )
    if not rows:
        return []
    ceiling = ", ".join(f"{u} client{'s' if u != 1 else ''} {r:,.0f}/s" for u, r in data.job_ceiling.items())
    return [
        Heading("Work queues: jobs per second, latency, redeliveries"),
        Para(
            "Every user puts a job, takes the next one and acks it; one take in 50 ends with the "
            "consumer's death, so its job comes back once its lease (0.5 s) runs out. **× ceiling** "
            "divides the jobs completed per second by the raw ceiling of the same number of clients "
            "each pushing and popping one element (redis-py LPUSH then RPOP loops, measured in the "
            f"same run: {ceiling or 'not measured'}). **latency** runs from a job's put to its ack; "
            "**redeliveries/job** counts the deliveries beyond each job's first. After each run a "
            "fresh consumer drained the queue: a lost or twice-completed job fails the run."
        ),
        Table(
            (
                "queue",
                "users",
                "hot keys",
                "jobs/s",
                "× ceiling",
                "latency p50 ms",
                "latency p99 ms",
                "redeliveries/job",
                "run",
            ),
            tuple(
                (
                    r.strategy,
                    str(r.users),
                    str(r.hot_keys),
                    _fmt(r.committed_per_s, ",.0f"),
                    _x(r.of_ceiling),
                    _ms(r.latency_p50_ms),
                    _ms(r.latency_p99_ms),
                    _fmt(r.redeliveries_per_job, ".4f"),
                    "ok" if r.ok else "FAILED",
                )
                for r in rows
            ),
        ),
    ]


def process_blocks(data: SweepData) -> list[Block]:
    """The comparison of Locust process counts, when the sweep ran more than one."""
    counts = data.process_counts
    if len(counts) < 2:
        return []
    cores = data.meta.get("machine", {}).get("cores", "?")
    header, rows = process_comparison_table(data)
    intro = (
        f"Every point ran with {', '.join(map(str, counts))} Locust processes (`--processes`) in this "
        f"sweep, on {cores} cores; **× {counts[0]}** divides by the same point at {counts[0]}. The raw "
        "ceiling here is redis-py PING loops at the same number of clients, split over as many "
        "processes: what that many Python client processes can push at all. **Locust CPU** is CPU time "
        "over wall time per Locust process (100%: one core kept busy; n×: each of n processes); "
        "**Redis CPU** is the server's CPU time per second (every thread, and anyone else's load on a "
        "shared server); **machine CPU** the busy share of all the machine's cores (anyone's "
        "processes); both over Locust's first to last request. The limit of each run: Redis when it "
        f"used {BUSY:.0%} of a core or more, else the Locust process(es) at {BUSY:.0%} or more, else the "
        f"machine's cores when {BUSY:.0%} of them were busy, else no CPU: round trips and contention. "
        f"Below the table, per point: the fewest processes were the limit when their CPU was {BUSY:.0%} "
        f"or more, or more processes raised commits/s by {ROSE - 1:.0%} or more, while Redis and the "
        "machine had headroom."
    )
    return [
        Heading("Locust processes: where the load generator, not Redis, was the limit"),
        Para(intro),
        Table(header, tuple(rows), "lllrrrrrrrrl"),
        *(Para(line) for line in generator_verdicts(data)),
    ]


POINT_COLUMNS = (
    "workload",
    "strategy",
    "kind",
    "users",
    "hot_keys",
    "ok",
    "committed_per_s",
    "committed_spread",
    "of_ceiling",
    "ceiling_per_s",
    "requests",
    "failures",
    "commits",
    "p50_ms",
    "p99_ms",
    "retries_per_commit",
    "round_trips_per_commit",
    "lock_wait_mean_ms",
    "lock_wait_p99_ms",
    "lock_hold_mean_ms",
    "jain_index",
    "processes",
    "generator_cpu",
    "server_cpu",
    "machine_cpu",
)


def _pairs(rows: list[SweepRow]) -> list[tuple[str, str]]:
    return list(dict.fromkeys((r.workload, r.strategy) for r in rows))


def _failures_of(data: SweepData, workload: str, strategy: str) -> str:
    rows = [r for r in data.rows if (r.workload, r.strategy) == (workload, strategy)]
    failures, requests = sum(r.failures for r in rows), sum(r.requests for r in rows)
    commits = sum(r.commits for r in rows)
    share = _pct(failures / requests if requests else None)
    return f"{workload}/{strategy} {failures:,} of {requests:,} ({share}; {commits:,} commits)"


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.0%}" if value == 0 or value >= 0.01 else "<1%"


def write_points(data: SweepData, path: Path) -> Path:
    """One row per point: the figures behind every plot, small enough to commit."""
    with path.open("w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(POINT_COLUMNS)
        for r in sorted(
            data.all_rows, key=lambda r: (r.workload, r.hot_keys, r.strategy, r.users, r.processes)
        ):
            writer.writerow([_cell(getattr(r, c)) for c in POINT_COLUMNS])
    return path


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)
