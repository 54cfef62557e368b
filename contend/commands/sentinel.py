"""`contend sentinel`."""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from rich.console import Console
from rich.markup import escape

from contend import exitcodes, interrupt
from contend.ci.document import document
from contend.commands.arguments import HelpFormatter, positive_float, positive_int
from contend.commands.names import COMMANDS
from contend.commands.outputs import add_ci_options, report_console, resolve_outputs, write_document
from contend.commands.progress import Reporter
from contend.exitcodes import ExitCode

#: Seconds all the failovers may take by default (one takes about 3 s to set up and 2-3 s to happen).
BUDGET = 300.0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "sentinel",
        help=COMMANDS["sentinel"],
        description="Start a master, its replica and three Sentinels (quorum 2) as embedded servers, "
        "keep a writer going through Sentinel, kill the master with SIGKILL and measure until the "
        "Sentinels have promoted the replica: the failover's seconds, the writes acknowledged, and how "
        "many of them the new master lacks. Each failover gets a new group; each prints its line as it "
        "ends. --budget bounds the whole run: no failover starts past it. Exit 0 when every failover "
        "asked for was measured, 3 when the budget ran out first.",
        formatter_class=HelpFormatter,
        epilog=exitcodes.epilog(),
    )
    parser.add_argument(
        "--failovers", type=positive_int, default=5, metavar="N", help="failovers to measure (default 5)"
    )
    parser.add_argument(
        "--budget",
        type=positive_float,
        default=BUDGET,
        metavar="S",
        help="seconds for the whole run (default %(default)g)",
    )
    parser.add_argument(
        "--redis-server",
        metavar="PATH",
        help="redis-server binary for the master, the replica and the Sentinels (see `contend server --info`)",
    )
    add_ci_options(parser, "every failover's figures", junit=False)
    return parser


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from contend.servers.binary import find_redis_server
    from contend.servers.sentinel import EmbeddedSentinelGroup, Failover, lost_writes

    resolve_outputs(args)
    out = report_console(args, out, err)
    binary = find_redis_server(args.redis_server)
    started = time.monotonic()
    deadline = started + args.budget
    done: list[Failover] = []
    interrupted: interrupt.Interrupted | None = None
    out.print(
        escape(
            f"contend sentinel: {args.failovers} failover(s) with {binary.describe()}, budget {args.budget:g} s"
        ),
        soft_wrap=True,
    )
    with Reporter(err, "contend sentinel", args.failovers, quiet=args.quiet) as progress:
        try:
            for k in range(args.failovers):
                if time.monotonic() > deadline:
                    break
                progress.working(f"failover {k + 1}: starting a master, a replica and 3 Sentinels")
                with EmbeddedSentinelGroup(binary) as group:
                    progress.working(f"failover {k + 1}: writing, killing the master")
                    f = lost_writes(group)
                done.append(f)
                line = (
                    f"failover {k + 1}: {f.seconds:.2f} s, {f.acked} writes acknowledged "
                    f"({f.acked_after} after it), {f.lost} of them lost"
                )
                progress.finished(line)
                out.print(escape(line), soft_wrap=True)
        except interrupt.Interrupted as exc:
            interrupted = exc
    interrupted = interrupted or interrupt.arrived()
    seconds = [f.seconds for f in done]
    if interrupted is not None:
        code, verdict = interrupted.code, "interrupted"
        out.print(
            f"[bold yellow]interrupted[/] ({interrupted}) after {len(done)} failover(s); servers stopped"
        )
    elif len(done) < args.failovers:
        code, verdict = ExitCode.INCONCLUSIVE, "inconclusive"
        out.print(
            f"[bold yellow]the {args.budget:g} s budget ran out after {len(done)} of {args.failovers} "
            "failover(s)[/]: raise --budget"
        )
    else:
        code, verdict = ExitCode.OK, "measured"
    if seconds:
        out.print(
            f"failover: median {statistics.median(seconds):.2f} s, worst {max(seconds):.2f} s; "
            f"acknowledged writes lost: {sum(f.lost for f in done)} of {sum(f.acked for f in done)}"
        )
    write_document(
        args.json,
        document(
            "sentinel",
            code,
            verdict,
            server=binary.describe(),
            failovers_asked=args.failovers,
            budget_seconds=args.budget,
            seconds=round(time.monotonic() - started, 3),
            failovers=[
                {
                    "seconds": round(f.seconds, 3),
                    "acked": f.acked,
                    "acked_after": f.acked_after,
                    "lost": f.lost,
                }
                for f in done
            ],
        ),
    )
    return code
