"""`contend bench`."""

from __future__ import annotations

import argparse
from dataclasses import asdict
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from contend import exitcodes
from contend.benchmarks.gate import GateBench, bench_gate
from contend.benchmarks.locks import LockBench, bench_locks
from contend.benchmarks.registry import RegistryBench, bench_registry
from contend.ci.document import document
from contend.ci.summary import append_summary, rich_table
from contend.commands.arguments import HelpFormatter, add_renamed, positive_float, positive_int, renamed_value
from contend.commands.names import COMMANDS
from contend.commands.outputs import add_ci_options, report_console, resolve_outputs, write_document
from contend.commands.progress import Reporter
from contend.exitcodes import ExitCode
from contend.servers.target import open_target

FAMILIES = ("registry", "lock", "gate")
#: Concurrent clients when --clients is not given.
DEFAULT_CLIENTS = {"registry": 16, "lock": 8, "gate": 1}


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "bench",
        parents=[common],
        help=COMMANDS["bench"],
        description="Measure, in one run, the raw round-trip rate of redis-py clients (INCR loops for "
        "the registry, PING loops for locks) and each implementation's rate, printed as ratios to it; "
        "one-client ratios come from alternating slices, so the machine's noise cancels.",
        formatter_class=HelpFormatter,
        epilog=exitcodes.epilog(),
    )
    parser.add_argument(
        "family",
        type=renamed_value({"locks": "lock"}, "contend bench"),
        choices=FAMILIES,
        help="what to measure: registry or lock (each implementation against raw round trips), or "
        "gate (the scheduler's cost per round trip, sync and asyncio clients)",
    )
    add_renamed(
        parser,
        "--duration",
        "--seconds",
        type=positive_float,
        default=1.0,
        metavar="S",
        help="time per measurement (default %(default)s)",
    )
    parser.add_argument(
        "--clients",
        type=positive_int,
        metavar="N",
        help="concurrent clients (default: 16 for registry, 8 on one key for locks)",
    )
    parser.add_argument(
        "--batch",
        type=positive_int,
        default=10_000,
        metavar="N",
        help="new names in one register_many call (default %(default)s)",
    )
    add_ci_options(parser, "the figures", junit=False)
    return parser


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    resolve_outputs(args)
    out = report_console(args, out, err)
    clients = args.clients or DEFAULT_CLIENTS[args.family]
    result: RegistryBench | LockBench | GateBench
    with open_target(args.redis_url, args.redis_server) as target:
        out.print(escape(f"contend bench {args.family} on {target.description}"), soft_wrap=True)
        client = target.client()
        run_ns = target.namespace(args.namespace, client=client)
        try:
            with Reporter(err, f"contend bench {args.family}", quiet=args.quiet) as progress:

                def step(what: str) -> None:
                    progress.finished(f"measuring {what}")
                    progress.working(what)

                if args.family == "gate":
                    result = bench_gate(target, on_step=step)
                elif args.family == "lock":
                    result = bench_locks(
                        target,
                        run_ns,
                        seconds=args.duration,
                        clients=clients,
                        on_step=step,
                    )
                else:
                    result = bench_registry(
                        target,
                        run_ns,
                        seconds=args.duration,
                        clients=clients,
                        batch=args.batch,
                        on_step=step,
                    )
        finally:
            run_ns.cleanup()
            client.close()
    if isinstance(result, GateBench):
        out.print(gate_table(result))
        append_summary(f"## contend bench gate\n\n{rich_table(gate_table(result))}")
        figures = {**asdict(result), "ratios": result.ratios()}
        write_document(args.json, document("bench", ExitCode.OK, "measured", family=args.family, **figures))
        return ExitCode.OK
    code = ExitCode.OK
    if isinstance(result, LockBench):
        out.print(locks_table(result))
        for line in lock_targets(result):
            out.print(line)
        for line in contention_errors(result):
            out.print(escape(line), soft_wrap=True)
        if any(row.contended_error and not row.known_bad for row in result.rows):
            code = ExitCode.FAILED
        append_summary(f"## contend bench lock\n\n{rich_table(locks_table(result))}")
    else:
        out.print(registry_table(result))
        append_summary(f"## contend bench registry\n\n{rich_table(registry_table(result))}")
    figures = asdict(result)
    verdict = "measured" if code == ExitCode.OK else "raised"
    write_document(args.json, document("bench", code, verdict, family=args.family, **figures))
    return code


def gate_table(result: GateBench) -> Table:
    """Microseconds per round trip, raw and under the scheduler, and the ratios."""
    table = Table(
        title="one PING round trip, alone and under the scheduler (median of alternating slices)",
        title_justify="left",
    )
    table.add_column("client", style="bold")
    table.add_column("raw µs", justify="right")
    table.add_column("gated µs", justify="right")
    table.add_column("gated / raw", justify="right")
    table.add_column("overhead µs", justify="right")
    for label, raw, gated in (
        ("redis-py", "sync_raw", "sync_gated"),
        ("redis.asyncio", "async_raw", "async_gated"),
    ):
        r, g = result.median(raw) * 1e6, result.median(gated) * 1e6
        table.add_row(label, f"{r:.0f}", f"{g:.0f}", f"{g / r:.2f}", f"{g - r:.0f}")
    ratio = result.ratios()["async gate overhead / sync gate overhead"]
    table.caption = f"the async gate's overhead is {ratio:.2f}× the sync gate's"
    return table


def registry_table(result: RegistryBench) -> Table:
    raw1, rawn = result.raw_one.per_second, result.raw_many.per_second
    table = Table(
        title=f"register() rate as a ratio to raw INCR round trips: "
        f"1 client {raw1:,.0f}/s, {result.clients} clients {rawn:,.0f}/s",
        title_justify="left",
    )
    table.add_column("strategy", style="bold")
    table.add_column("1 client /s", justify="right")
    table.add_column("× INCR, same slices", justify="right")
    table.add_column(f"{result.clients} clients /s", justify="right")
    table.add_column("× INCR 1 client", justify="right")
    table.add_column(f"× INCR {result.clients} clients", justify="right")
    table.add_column(f"register_many({result.batch:,})", justify="right")
    for row in result.rows:
        one, many = row.one_client.per_second, row.many_clients.per_second
        table.add_row(
            row.name + (" [dim](known-bad)[/]" if row.known_bad else ""),
            f"{one:,.0f}",
            f"{row.one_ratio:.2f}",
            f"{many:,.0f}",
            f"{many / raw1:.2f}",
            f"{many / rawn:.2f}",
            f"{row.batch_seconds * 1000:,.0f} ms",
        )
    table.caption = (
        "× INCR, same slices: the median, over slices taken in turn with one client's INCR loop, of "
        "register()s over INCRs in the neighbouring slice (not the title's rate, measured apart); "
        "× INCR 1 client and × INCR N clients: the contended rate over the title's rates"
    )
    return table


#: The uncontended acquire+release rate `token` must reach, as a ratio to raw PINGs (two round trips).
TOKEN_TARGET = 0.45


def locks_table(result: LockBench) -> Table:
    raw1, rawn = result.raw_one.per_second, result.raw_many.per_second
    table = Table(
        title=f"acquire+release cycles as a ratio to raw PING round trips: "
        f"1 client {raw1:,.0f}/s, {result.clients} clients {rawn:,.0f}/s",
        title_justify="left",
    )
    table.add_column("lock", style="bold")
    table.add_column("round trips", justify="right")
    table.add_column("1 client /s", justify="right")
    table.add_column("PING /s, same slices", justify="right")
    table.add_column("× PING, same slices", justify="right")
    table.add_column(f"{result.clients} clients, 1 key /s", justify="right")
    table.add_column("× PING 1 client", justify="right")
    for row in result.rows:
        one = row.one_client.per_second
        many = row.contended.per_second if row.contended is not None else None
        table.add_row(
            row.name + (" [dim](known-bad)[/]" if row.known_bad else ""),
            str(row.round_trips),
            f"{one:,.0f}",
            f"{row.raw_alongside.per_second:,.0f}",
            f"{row.ratio:.2f}",
            f"{many:,.0f}" if many is not None else "raised",
            f"{many / raw1:.2f}" if many is not None else "—",
        )
    table.caption = (
        "× PING, same slices: the median, over slices taken in turn with one client's PING loop, of "
        "cycles over PINGs in the neighbouring slice (its baseline is that row's PING column, not the "
        "title's rate); × PING 1 client: the contended rate over the title's 1-client rate"
    )
    return table


def contention_errors(result: LockBench) -> list[str]:
    """A line per lock that raised under contention: a known-bad one's defect, or a correct
    one's failure (which fails the run)."""
    return [
        f"{row.name}{' (known-bad)' if row.known_bad else ''} raised under contention, so it has no "
        f"contended rate: {row.contended_error}" + (" (its defect)" if row.known_bad else "")
        for row in result.rows
        if row.contended_error
    ]


def lock_targets(result: LockBench) -> list[str]:
    """The figure the issue sets: token's uncontended cycle at >= 0.45× the raw rate."""
    lines = []
    for row in result.rows:
        if row.name == "token":
            ratio = row.ratio
            verdict = "[green]met[/]" if ratio >= TOKEN_TARGET else "[red]missed[/]"
            lines.append(f"token: {ratio:.2f}× raw for 2 round trips (target ≥ {TOKEN_TARGET}×): {verdict}")
    return lines
