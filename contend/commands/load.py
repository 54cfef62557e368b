"""`contend load`: the contention sweep (Locust, headless), then the report."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from contend import exitcodes
from contend.ci.document import document
from contend.ci.summary import append_summary
from contend.commands.arguments import (
    HelpFormatter,
    add_renamed,
    positive_float,
    positive_int,
    positive_ints,
    share,
)
from contend.commands.families import family_name
from contend.commands.names import COMMANDS
from contend.commands.outputs import add_ci_options, report_console, resolve_outputs, write_document
from contend.commands.progress import Reporter
from contend.exitcodes import ExitCode
from contend.load import sweep as sw
from contend.load.metrics import MAX_FAILED_SHARE
from contend.load.workload import USER_WORKLOADS
from contend.load.workloads import WORKLOADS
from contend.report.data import SweepData, load_sweep, process_comparison_table
from contend.servers.keyspace import Namespace, new_run_id
from contend.servers.target import open_target
from contend.subject.resolve import trial
from contend.values import family_label


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    strategies = "; ".join(
        f"{name}: {', '.join(w.strategies(include_known_bad=False))}" for name, w in WORKLOADS.items()
    )
    parser: argparse.ArgumentParser = sub.add_parser(
        "load",
        parents=[common],
        help=COMMANDS["load"],
        description="Run Locust headless (loadtests/) over strategies × users × hot-key counts, one run per "
        "point, measure the raw round-trip ceiling at the same client counts, keep the raw CSVs under "
        "<out>/raw/ and write the contention report to <out>/. The quick default sweeps the registry "
        f"(watch, lock_first, lua) at {','.join(map(str, sw.QUICK_USERS))} users and "
        f"{','.join(map(str, sw.QUICK_HOT_KEYS))} hot keys for {sw.QUICK_SECONDS:g} s each; --full sweeps "
        f"every workload and strategy at {','.join(map(str, sw.FULL_USERS))} users for "
        f"{sw.FULL_SECONDS:g} s each. Exit 0 when every run kept its invariant and committed, 1 when "
        "one broke its invariant, crashed, committed nothing or failed more than --max-failed-share of "
        f"its operations, 2 on bad input. Strategies: {strategies}. With --impl MODULE:FACTORY --kind "
        f"{' or '.join(family_label(k) for k in USER_WORKLOADS)}, your own implementation is the one "
        "strategy: a lock protects the counter and transfer read-modify-writes, a registry takes the "
        "registry workload's registrations, a rate limiter takes the limiter workload's hits, a queue the "
        "jobs workload's puts, takes and acks. The jobs workload is read against the raw LPUSH/RPOP "
        "ceiling, measured in the same run.",
        formatter_class=HelpFormatter,
        epilog=exitcodes.epilog(),
    )
    parser.add_argument("--full", action="store_true", help="the full sweep (takes most of an hour)")
    parser.add_argument(
        "--workload", action="append", choices=list(WORKLOADS), help="only this workload (repeatable)"
    )
    parser.add_argument(
        "--strategy",
        action="append",
        metavar="NAME",
        help="only this strategy (repeatable); each workload runs those it has",
    )
    parser.add_argument(
        "--impl",
        metavar="MODULE:FACTORY",
        help="load your own implementation (importable from the current directory or PYTHONPATH) as the "
        "one strategy, named MODULE:FACTORY; not with --strategy",
    )
    parser.add_argument(
        "--kind",
        type=family_name,
        metavar="FAMILY",
        help="the protocol --impl follows, needed with --impl: lock (counter and transfer workloads), "
        "registry (registry workload) or queue (jobs workload)",
    )
    parser.add_argument("--users", type=positive_ints, metavar="N,N,...", help="concurrent users per point")
    parser.add_argument(
        "--hot-keys",
        type=positive_ints,
        metavar="N,N,...",
        help="distinct keys fought over (1: maximal contention)",
    )
    add_renamed(
        parser,
        "--duration",
        "--seconds",
        type=positive_int,
        metavar="S",
        help="run time of each point in whole seconds (Locust's --run-time; default 2, 10 with --full)",
    )
    parser.add_argument(
        "--processes",
        metavar="N[,N,...]",
        help=f"Locust processes per run (default: cores - 1 = {sw.default_processes()}); several, e.g. "
        "1,2,4: every point runs at each count and the raw ceiling is measured per count (redis-py "
        "PING loops in as many processes), and the report compares them with the fewest: commits/s, "
        "ceiling, Locust and Redis CPU, and whether one Locust process or Redis was the limit",
    )
    add_renamed(
        parser,
        "--ceiling-duration",
        "--ceiling-seconds",
        type=positive_float,
        metavar="S",
        help=f"each measurement of the raw ceiling, before and after the runs (default {sw.CEILING_SECONDS:g})",
    )
    parser.add_argument(
        "--ttl-ms",
        type=positive_int,
        default=10_000,
        metavar="MS",
        help="lease of the lock strategies (default %(default)s)",
    )
    parser.add_argument(
        "--max-failed-share",
        type=share,
        default=MAX_FAILED_SHARE,
        metavar="F",
        help="a point fails when more than this share of its operations failed or raised (default "
        "%(default)s); a point that committed nothing fails whatever the share",
    )
    parser.add_argument(
        "--out",
        type=Path,
        metavar="DIR",
        help="where the report goes, raw data in DIR/raw (default: reports/load-<date>-<time>)",
    )
    parser.add_argument("--no-report", action="store_true", help="only run the sweep; `contend report` later")
    add_ci_options(parser, "every point's figures and verdict", junit=False)
    return parser


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    resolve_outputs(args)
    out = report_console(args, out, err)
    plan = sw.make_plan(
        full=args.full,
        workloads=args.workload,
        strategies=args.strategy,
        users=args.users,
        hot_keys=args.hot_keys,
        seconds=args.duration,
        processes=None if args.processes is None else sw.parse_counts(args.processes, "--processes"),
        ttl_ms=args.ttl_ms,
        ceiling_seconds=args.ceiling_duration,
        impl=args.impl,
        kind=args.kind,
        max_failed_share=args.max_failed_share,
    )
    sw.loadtests_dir()
    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    dest: Path = args.out or Path("reports") / f"load-{stamp}"
    if (dest / sw.RAW_DIR / sw.SWEEP_FILE).exists():
        raise sw.SweepError(f"{dest} already holds a sweep; pick another --out")
    points = plan.points()
    with open_target(args.redis_url, args.redis_server, keep_clock=False) as target:  # Locust: real time
        space = target.namespace(args.namespace or f"contend:{new_run_id()}")
        namespace = space.prefix
        if plan.impl:  # code that cannot take one step would be measured doing nothing
            _try_user_impl(plan, space)
        procs = ",".join(map(str, plan.processes))
        out.print(
            escape(
                f"contend load on {target.description}: {len(points)} runs of {plan.seconds:g} s, "
                f"{procs} Locust process(es) each, about {_duration(plan.estimate_seconds())}"
            ),
            soft_wrap=True,
        )
        try:
            with Reporter(err, "contend load", len(points) + plan.ceilings(), quiet=args.quiet) as progress:

                def step(text: str, done: int, total: int) -> None:
                    if done:
                        progress.finished(f"{text} (starting)")
                    progress.working(text, done=done)

                result = sw.run_sweep(plan, target, namespace, dest, argv=sys.argv[1:], on_step=step)
        finally:
            sw.cleanup(target, namespace)
    out.print(summary_table(result))
    if len(plan.processes) > 1:
        out.print(processes_table(load_sweep(dest / sw.RAW_DIR)))
    broken = [p for p in result.points if not p["ok"]]
    for p in broken:
        if not p["invariant_ok"]:
            why = "invariant broken"
        elif not p.get("progress_ok", True):
            why = "run failed"
        else:
            why = f"Locust exited {p['exit_code']}"
        tail = sw.broken_because(dest / sw.RAW_DIR, p)
        err.print(
            f"[red]{escape(p['workload'])}/{escape(p['strategy'])} {p['users']} users {p['hot_keys']} hot keys:[/] "
            f"{escape(why)}: {escape(tail)}",
            soft_wrap=True,
        )
    out.print(escape(f"raw data: {dest / sw.RAW_DIR}"), soft_wrap=True)
    report: dict[str, str] = {"raw": str(dest / sw.RAW_DIR)}
    if not args.no_report:
        from contend.report.build import build_report

        built = build_report(dest / sw.RAW_DIR, dest)
        out.print(
            escape(f"report: {built.html}  (and {built.markdown.name}, {len(built.plots)} plots)"),
            soft_wrap=True,
        )
        report |= {"html": str(built.html), "markdown": str(built.markdown)}
        append_summary(built.summary)
    code = ExitCode.FAILED if broken else ExitCode.OK
    verdict = f"{len(broken)} point(s) broken" if broken else "every invariant held, every point committed"
    write_document(
        args.json,
        document(
            "load",
            code,
            "invariant-broken" if broken else "ok",
            headline=verdict,
            server=target.description,
            points=result.points,
            ceiling=result.ceiling,
            report=report,
        ),
    )
    return code


def _try_user_impl(plan: sw.Plan, space: Namespace) -> None:
    """One object of the user's implementation, built and (a lock) acquired once on the server
    (`resolve.trial`); ContendError (exit 2) when that cannot work. What it wrote goes with the
    namespace."""
    assert plan.subject is not None  # make_plan loaded --impl
    where = space.child("probe") if plan.subject.family == "registry" else space.key("probe")
    try:
        trial(plan.subject, space.client, where)
    finally:
        space.cleanup()


def summary_table(result: sw.Sweep) -> Table:
    """Requests per second and verdict of each point, one row per workload/strategy/hot keys
    (and Locust process count, when the sweep compares several)."""
    users = sorted({p["users"] for p in result.points})
    several = len({p.get("processes", 1) for p in result.points}) > 1
    table = Table(title="committed operations/s (✗: invariant broken or run failed)", title_justify="left")
    table.add_column("workload/strategy", style="bold", no_wrap=True)
    table.add_column("hot keys", justify="right")
    if several:
        table.add_column("processes", justify="right")
    for u in users:
        table.add_column(f"{u} users", justify="right")
    rows: dict[tuple[str, str, int, int], dict[int, str]] = {}
    for p in result.points:
        cell = "✗" if not p["ok"] else _rate(p)
        rows.setdefault((p["workload"], p["strategy"], p["hot_keys"], p.get("processes", 1)), {})[
            p["users"]
        ] = cell
    for (w, s, h, procs), cells in rows.items():
        table.add_row(
            f"{w}/{s}", str(h), *([str(procs)] if several else []), *(cells.get(u, "") for u in users)
        )
    return table


def processes_table(data: SweepData) -> Table:
    """The process-count comparison of the report, one row per run, and where the limit was."""
    header, rows = process_comparison_table(data)
    table = Table(title="Locust processes: commits/s and raw ceiling beside the fewest", title_justify="left")
    for i, name in enumerate(header):
        left = i < 2 or i == len(header) - 1
        table.add_column(name, justify="left" if left else "right", style="bold" if i == 0 else None)
    for row in rows:
        table.add_row(*row)
    return table


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} min"


def _rate(point: dict[str, Any]) -> str:
    rate = point.get("committed_per_s")
    return "" if rate is None else f"{rate:,.0f}"
