"""`contend stress`: worker processes hammer one implementation, faults are injected, the history is checked."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from contend import exitcodes
from contend.ci.document import document
from contend.ci.junit import write_junit
from contend.ci.summary import append_summary
from contend.commands.arguments import HelpFormatter, add_renamed, warn_renamed
from contend.commands.families import family_label, family_name
from contend.commands.names import COMMANDS
from contend.commands.outputs import add_ci_options, report_console, resolve_outputs, write_document
from contend.commands.progress import Reporter
from contend.errors import ContendError
from contend.exitcodes import ExitCode
from contend.stress.nemesis import NEMESES
from contend.stress.options import StressOptions, validate
from contend.stress.report import junit_cases, summary_markdown
from contend.stress.result import RunProgress, StressResult
from contend.stress.run import run_stress
from contend.stress.workers import FAMILIES
from contend.stress.workload import STRESS_SCOPE, StressWorkload, stressable
from contend.subject.multi_master import MULTI_MASTER_LOCKS
from contend.subject.spec import parse_spec


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    nemeses = "; ".join(f"{name}: {what}" for name, what in NEMESES.items())
    parser: argparse.ArgumentParser = sub.add_parser(
        "stress",
        parents=[common],
        help=COMMANDS["stress"],
        description="N worker processes (not threads) run the implementation's operations against the "
        "embedded server (or --redis-url) for --duration seconds while the nemesis injects faults. "
        "Every operation is recorded; the history is checked for linearizability and the family's "
        "invariants, and kept with an HTML timeline in OUT/stress-<id>/. Runs a catalog implementation "
        "(--only NAME) or your own (--impl package.module:factory --kind registry|lock|transaction). A "
        "bank (transaction) is judged from what the server ran, as its MONITOR stream shows it: the "
        "conflict graph's cycles named (lost update, read skew, write skew), every audit's sum and the "
        "final balances. Exit 0 valid, 1 a violation, 3 unknown (the search ran out of time, or what "
        "the server's record could not judge), 2 bad input or a requested nemesis that injected no fault.",
        formatter_class=HelpFormatter,
        epilog=exitcodes.epilog(),
    )
    names = ", ".join([*(i.name for i in stressable()), *MULTI_MASTER_LOCKS])
    parser.add_argument("--only", metavar="NAME", help=f"the catalog implementation to run: {names}")
    parser.add_argument(
        "--impl",
        metavar="MODULE:FACTORY",
        help="run your own implementation instead, importable from the current directory or PYTHONPATH "
        "(a catalog NAME here is the old spelling of --only)",
    )
    kinds = " or ".join(family_label(f) for f in FAMILIES)
    parser.add_argument(
        "--kind",
        type=family_name,
        metavar="FAMILY",
        help=f"the protocol --impl MODULE:FACTORY follows: {kinds} (required with it; docs/protocol.md)",
    )
    add_renamed(
        parser,
        "--processes",
        "--procs",
        type=int,
        default=4,
        metavar="N",
        help="worker processes (default %(default)s)",
    )
    parser.add_argument(
        "--cluster",
        type=int,
        metavar="N",
        help="run on an embedded Redis Cluster of N masters (3 to 16) that contend starts, with "
        "redis.cluster.RedisCluster clients (nemeses reshard and cluster-failover act on it; the "
        "latter gives each master a replica); an existing cluster: --redis-url redis+cluster://HOST:PORT",
    )
    parser.add_argument(
        "--masters",
        type=int,
        metavar="N",
        help="with --only redlock or pottery_redlock, or your own lock over masters (--impl M:F --kind lock, "
        "called as factory(clients: list[redis.Redis], key, ttl_ms)): the lock's independent embedded "
        "masters, an odd number from 3 to 9 (default 5 for the Redlocks), without persistence; the "
        "counter it protects stays on a server of its own (nemeses master-pause, master-restart and "
        "partition act on the masters)",
    )
    parser.add_argument(
        "--duration", type=float, default=5.0, metavar="S", help="seconds of load (default %(default)s)"
    )
    parser.add_argument(
        "--nemesis",
        action="append",
        metavar="NAME",
        help=f"a fault to inject, repeatable or comma-separated ({nemeses})",
    )
    parser.add_argument(
        "--interval",
        type=float,
        default=1.0,
        metavar="S",
        help="seconds between faults, the first one included: a run must last longer than that "
        "(default %(default)s)",
    )
    parser.add_argument(
        "--ttl-ms", type=int, default=500, metavar="MS", help="lock lease length (default %(default)s)"
    )
    parser.add_argument(
        "--hold-ms",
        type=float,
        default=2.0,
        metavar="MS",
        help="how long a lock holder waits before its write (default %(default)s)",
    )
    parser.add_argument(
        "--fault-ms",
        type=int,
        metavar="MS",
        help="length of a pause (default: 500; a lock holder's pause lasts past its lease, until another "
        "worker has written) or of a server's downtime after a kill (default 50)",
    )
    parser.add_argument(
        "--lag-ms",
        type=int,
        default=100,
        metavar="MS",
        help="failover: how long the master acknowledges writes alone before it dies (default %(default)s)",
    )
    parser.add_argument(
        "--persistence",
        choices=("none", "aof", "rdb"),
        default="none",
        help="the embedded server's persistence, which decides what a server-kill loses (default none)",
    )
    parser.add_argument(
        "--appendfsync",
        choices=("always", "everysec", "no"),
        default="always",
        help="AOF fsync policy with --persistence aof (default always)",
    )
    parser.add_argument(
        "--op-timeout",
        type=float,
        default=1.0,
        metavar="S",
        help="socket timeout of a worker's round trip; past it the operation is info (default %(default)s)",
    )
    add_renamed(
        parser,
        "--search-seconds",
        "--check-timeout",
        type=float,
        default=30.0,
        metavar="S",
        help="real-time budget of the whole linearizability search; past it the verdict is unknown "
        "(exit 3) (default %(default)s)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("runs"),
        metavar="DIR",
        help="where run directories go (default runs)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the workers' random choices (default 0)")
    parser.add_argument("--no-html", action="store_true", help="do not write the HTML timeline")
    add_ci_options(parser, "the run", bare_json=True)
    return parser


def _implementation(args: argparse.Namespace) -> tuple[str, str | None]:
    """(what to run, kind): --only NAME or the old `--impl NAME` (kind None), or
    `--impl package.module:factory --kind FAMILY`."""
    if args.impl and args.only:
        raise ContendError("--only runs a catalog implementation and --impl runs yours: give one of them")
    user = bool(args.impl) and ":" in args.impl
    if user:
        return str(args.impl), args.kind  # parsed with the rest of the run (stress.options.validate)
    parse_spec(None, args.kind, STRESS_SCOPE)  # --kind goes with --impl
    if args.impl:
        warn_renamed(f"--impl {args.impl}", f"--only {args.impl}")
        return str(args.impl), None
    if not args.only:
        raise ContendError(
            "which implementation? give --only NAME (a catalog implementation) or --impl MODULE:FACTORY"
        )
    return str(args.only), None


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    resolve_outputs(args)
    out = report_console(args, out, err)
    impl, kind = _implementation(args)
    options = StressOptions(
        impl=impl,
        kind=kind,
        procs=args.processes,
        duration=args.duration,
        nemeses=tuple(args.nemesis or ()),
        interval=args.interval,
        ttl_ms=args.ttl_ms,
        hold_ms=args.hold_ms,
        fault_ms=args.fault_ms,
        lag_ms=args.lag_ms,
        persistence=args.persistence,
        appendfsync=args.appendfsync,
        op_timeout=args.op_timeout,
        out=args.out,
        redis_url=args.redis_url,
        redis_server=args.redis_server,
        namespace=args.namespace,
        seed=args.seed,
        check_timeout=args.search_seconds,
        html=not args.no_html,
        cluster=args.cluster,
        masters=args.masters,
    )
    workload = validate(options)

    def started_on(target: str) -> None:
        plan = _plan(options, workload)
        out.print(f"[bold]contend stress[/] {escape(plan)} on {escape(target)}", soft_wrap=True)

    with Reporter(err, "contend stress", quiet=args.quiet) as progress:
        phase = ["load"]

        def show(p: RunProgress) -> None:
            if p.checking:
                if phase[0] != "check":
                    phase[0] = "check"
                    progress.finished(f"load ended after {p.elapsed:.1f} s; checking the history")
                    progress.working(
                        "the linearizability search"
                        if workload.family != "transaction"
                        else "the conflict graph"
                    )
                return
            nemesis = f" · nemesis {p.nemesis}" if p.nemesis else ""
            progress.status(
                f"{p.elapsed:.1f}/{p.duration:g} s of load · ok {p.ok} · fail {p.fail} · info {p.info}{nemesis}",
                completed=None,
            )

        result = run_stress(options, show, started_on)
    report(result, out)
    write_document(args.json, document("stress", result.exit_code, result.outcome, **result.to_json()))
    write_junit(args.junit_xml, "contend stress", junit_cases(result))
    append_summary(summary_markdown(result))
    return result.exit_code


def _plan(options: StressOptions, workload: StressWorkload) -> str:
    family = workload.family
    name = f"{options.impl} ({family_label(family)})" if options.kind else options.impl
    parts = [name, f"{options.procs} processes", f"{options.duration:g} s"]
    if options.cluster is not None:
        parts.append(f"cluster of {options.cluster} masters")
    if workload.masters:
        parts.append(f"Redlock over {workload.masters} masters")
    if family == "lock":
        parts.append(f"lease {options.ttl_ms} ms")
    if options.nemeses:
        parts.append(f"nemesis {', '.join(options.nemeses)} every {options.interval:g} s")
    return " · ".join(parts)


def report(result: StressResult, out: Console) -> None:
    """The verdict as a person reads it (the first line named the servers)."""
    c = result.counts
    out.print(
        f"{sum(c.values())} operations: {c.get('ok', 0)} ok, {c.get('fail', 0)} fail, {c.get('info', 0)} info"
        f" · {len(result.nemesis)} nemesis events · {result.seconds:.1f} s"
    )
    for r in result.nemesis[:12]:
        out.print(f"  [yellow]nemesis[/] {escape(r.f)}: {escape(str(r.value))}", soft_wrap=True)
    if len(result.nemesis) > 12:
        out.print(f"  … and {len(result.nemesis) - 12} more nemesis events")
    if result.workload.family == "lock":
        out.print(escape(result.workload.fencing_note()), soft_wrap=True)
    verdict = result.verdict
    if verdict is None:  # a transaction run, judged from the server's record
        from contend.stress.bank_report import lines as transaction_lines

        for line in transaction_lines(result):
            out.print(escape(line), soft_wrap=True)
    else:
        out.print(f"linearizability: {escape(verdict.summary())}", soft_wrap=True)
        for p in verdict.partitions[:5]:
            out.print(escape(p.explain()), soft_wrap=True)
    names = ", ".join(result.invariants)
    if verdict is not None and result.violations:
        out.print(f"invariants ({names}): [bold red]{len(result.violations)} violation(s)[/]")
        groups: dict[str, list[str]] = {}
        for v in result.violations:
            groups.setdefault(v.check, []).append(str(v))
        for check, lines in groups.items():
            for line in lines[:3]:
                out.print(f"  {escape(line)}", soft_wrap=True)
            if len(lines) > 3:
                out.print(f"  … and {len(lines) - 3} more {check} violation(s)")
    elif verdict is not None:
        out.print(f"invariants hold: {names}", soft_wrap=True)
    style = {0: "bold green", 1: "bold red", 3: "bold yellow"}[result.history_exit_code]
    out.print(f"[{style}]{escape(result.history_headline())}[/]", soft_wrap=True)
    for line in result.explanation:
        out.print(escape(line), soft_wrap=True)
    for reason in result.no_fault:
        out.print(f"[bold red]NO FAULT — {escape(reason)}[/]", soft_wrap=True)
    if result.no_fault and result.exit_code == ExitCode.FAILED:
        out.print(
            "exit 1: the history shows a violation, which stands; the fault asked for was not "
            "tested (see NO FAULT above)",
            soft_wrap=True,
        )
    elif result.no_fault:
        out.print(
            f"exit {result.exit_code}: the run did not test what was asked (the history's verdict, "
            f"{result.history_outcome}, stands only for a run without that fault)",
            soft_wrap=True,
        )
    out.print(f"history:  {escape(str(result.history))}", soft_wrap=True)
    if result.timeline is not None:
        out.print(f"timeline: {escape(str(result.timeline))}", soft_wrap=True)
    out.print(f"re-check: {escape(result.recheck_command())}", soft_wrap=True)
