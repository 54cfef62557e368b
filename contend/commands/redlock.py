"""`contend redlock`: the Redlock search (contend.machines.redlock) from the command line."""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from rich.console import Console
from rich.markup import escape

from contend import exitcodes, interrupt
from contend.commands.arguments import HelpFormatter, positive_float, positive_int
from contend.commands.names import COMMANDS
from contend.errors import ContendError
from contend.exitcodes import ExitCode
from contend.machines.fencing import FENCES
from contend.machines.redlock import LIBRARIES, MASTERS, SHRINK_SECONDS, Demo, demo
from contend.servers.binary import find_redis_server

#: Its line in `contend --help` (contend.cli lists it beside contend.commands.names' commands).
SUMMARY = COMMANDS["redlock"]


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The `redlock` subcommand; it starts its own masters, so it takes none of `common`'s options."""
    parser: argparse.ArgumentParser = sub.add_parser(
        "redlock",
        help=SUMMARY,
        description="Start five embedded masters without persistence and search, with --runs fresh "
        "Hypothesis seeds, for two clients holding Redlock at once while masters restart empty and "
        "partitions cut a client off from a minority (Martin Kleppmann's counterexample); print how "
        "often and how fast it was found, then the first one shrunk. Without restarts (--no-restarts) "
        "the same lock passes the same search. With --fence, holders also write to a protected "
        "resource on a sixth server and the property judged is the resource's (no-stale-write). "
        "Exit 0 when the search ran, 3 when no seed found anything and some ended without a verdict.",
        formatter_class=HelpFormatter,
        epilog=exitcodes.epilog(),
    )
    parser.add_argument(
        "--runs", type=positive_int, default=20, metavar="N", help="seeds to search (default 20)"
    )
    parser.add_argument(
        "--max-examples",
        type=positive_int,
        default=500,
        metavar="N",
        help="examples per seed (default 500)",
    )
    parser.add_argument(
        "--shrink-seconds",
        type=positive_float,
        default=SHRINK_SECONDS,
        metavar="S",
        help=f"seconds the first counterexample's shrinking may take (default {SHRINK_SECONDS:g}); it "
        "then stops with the smallest found so far, and progress goes to stderr meanwhile",
    )
    parser.add_argument("--no-restarts", action="store_true", help="the same search without the restart rule")
    parser.add_argument(
        "--lib",
        choices=list(LIBRARIES),
        default="contend",
        help="whose Redlock: contend's (default) or pottery's",
    )
    parser.add_argument(
        "--fence",
        choices=sorted(FENCES),
        help="holders write to a protected resource on a sixth server, and the property judged is the "
        "resource's (no-stale-write): " + "; ".join(f"{f.name}: {f.about}" for f in FENCES.values()),
    )
    parser.add_argument("--fenced", action="store_true", help="the same as --fence resource")
    return parser


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    """Search, print the findings; ExitCode.INCONCLUSIVE when nothing was found and seeds were flaky."""
    if args.fenced:
        if args.fence not in (None, "resource"):
            raise ContendError("--fenced is --fence resource; give one or the other")
        args.fence = "resource"
    if args.lib == "pottery":
        try:
            import pottery  # noqa: F401
        except ImportError:
            raise ContendError("--lib pottery needs pottery: pip install -e '.[libs]'") from None
    binary = find_redis_server(keep_clock=True)  # the one five_masters starts (no --redis-server here)
    out.print(
        escape(
            f"contend redlock on {MASTERS} embedded masters, {binary.describe()}: {args.runs} seed(s) × "
            f"up to {args.max_examples} examples"
        ),
        soft_wrap=True,
    )
    try:
        result = demo(
            args.runs,
            args.max_examples,
            restarts=not args.no_restarts,
            lib=args.lib,
            fence=args.fence,
            on_seed=lambda line: err.print(escape(f"redlock · {line}"), soft_wrap=True),
            shrink_seconds=args.shrink_seconds,
        )
    except Exception:
        # Hypothesis can turn the interrupt into an error of its own (an assertion in its handler
        # when the signal came as a search began), as in `contend hunt`: after a stop signal, that
        # error is the interrupt.
        if (stopped := interrupt.arrived()) is None:
            raise
        raise stopped from None
    out.print(escape(report(result, args)), soft_wrap=True)
    if not result.found and not args.no_restarts and not result.stats.get("restarts"):
        out.print(
            "inconclusive: no master was restarted in any example, so the fault this search is for "
            "never happened; raise --max-examples or --runs",
            soft_wrap=True,
        )
        return ExitCode.INCONCLUSIVE
    if not result.found and result.flaky:
        out.print(
            f"inconclusive: {result.flaky} of {args.runs} seeds ended without a verdict (Hypothesis saw "
            "the same example behave differently) and none found a violation",
            soft_wrap=True,
        )
        return ExitCode.INCONCLUSIVE
    return ExitCode.OK


def report(result: Demo, args: argparse.Namespace) -> str:
    """The search's findings in words."""
    found = result.found
    rule = "without restarts" if args.no_restarts else "with masters restarted empty"
    fence = f", fence {args.fence!r} ({FENCES[args.fence].about})" if args.fence else ""
    what = "no-stale-write violated" if args.fence else "violated"
    lines = [
        f"{args.lib}'s Redlock over {MASTERS} masters, {rule}{fence}: "
        f"{what} in {len(found)}/{args.runs} seeds"
        + (f" ({result.flaky} inconclusive: flaky)" if result.flaky else "")
        + (
            f", median {statistics.median(found):.2f} s, worst {max(found):.2f} s"
            if found
            else f" ({args.max_examples} examples each)"
        ),
        f"searched {result.searched:.0f} s in all"
        + (f", {result.searched / len(found):.1f} s per seed that found one" if found else "")
        + (f"; found: {', '.join(f'{k} in {n}' for k, n in sorted(result.kinds.items()))}" if found else ""),
    ]
    stats = result.stats
    if args.fence:
        lines.append(
            f"the same search: {stats.get('examples', 0)} examples, {stats.get('two holders', 0)} with two "
            f"holders at once; in {stats.get('two holders, a write refused', 0)} of those the resource "
            f"refused a write, in {stats.get('two holders, both writes taken', 0)} it took both holders' writes"
        )
    if found and not result.shrunk:
        lines.append(result.violation)
    elif found:
        stopped = (
            f", stopped at its budget of {args.shrink_seconds:g} s (--shrink-seconds): the smallest found by then"
            if result.shrink_stopped
            else ""
        )
        lines.append(
            f"shrunk in {result.shrink_seconds:.0f} s{stopped}: {result.clients} clients, {result.round_trips} "
            f"round trips, {result.partitions} partition(s), {result.restarts} restart(s)\n{result.violation}\n"
            f"{result.shrunk}"
        )
    return "\n".join(lines)
