"""`contend hunt`."""

from __future__ import annotations

import argparse
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
from contend.errors import ContendError
from contend.exitcodes import ExitCode

#: Seconds the whole hunt may take by default: a run that would pass it stops between two examples.
BUDGET = 900.0


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "hunt",
        parents=[common],
        help=COMMANDS["hunt"],
        description="Run each known-bad implementation's state machine with --runs fresh Hypothesis "
        "seeds and report how many runs caught it, the median and worst seconds to the first failure, "
        "and the size of one shrunk counterexample (clients, round trips). Each implementation's row is "
        "printed as it finishes. --budget bounds the whole hunt: a run that would pass it stops between "
        "two examples, and the seeds left are reported as not run. Exit 0 when every implementation "
        "hunted was caught in every run that gave a verdict, 1 when one was missed in some run, 3 when "
        "the budget ran out (or Hypothesis called a run flaky) before a verdict for every seed and none "
        "was missed.",
        formatter_class=HelpFormatter,
        epilog=exitcodes.epilog(),
    )
    parser.add_argument(
        "--only",
        action="append",
        metavar="NAME",
        help="only this known-bad implementation (repeatable; default: every one, sync and async)",
    )
    parser.add_argument(
        "--runs", type=positive_int, default=20, metavar="N", help="seeds per implementation (default 20)"
    )
    parser.add_argument(
        "--max-examples",
        type=positive_int,
        default=2000,
        metavar="N",
        help="examples per run before it counts as missed (default %(default)s)",
    )
    parser.add_argument(
        "--budget",
        type=positive_float,
        default=BUDGET,
        metavar="S",
        help="seconds for the whole hunt (default %(default)g)",
    )
    parser.add_argument(
        "--no-shrink", action="store_true", help="skip the shrinking run of each implementation"
    )
    add_ci_options(parser, "every implementation's row", junit=False)
    return parser


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from contend.impl.catalog import ASYNC_IMPLEMENTATIONS, IMPLEMENTATIONS
    from contend.machines.hunt import HuntResult, hunt, known_bad
    from contend.servers.target import open_target

    resolve_outputs(args)
    out = report_console(args, out, err)
    chosen = known_bad(args.only)
    if args.only:
        names = {i.name for i in (*IMPLEMENTATIONS, *ASYNC_IMPLEMENTATIONS)}
        unknown = [n for n in args.only if n not in names]
        correct = [n for n in args.only if n in names and n not in {i.name for i in chosen}]
        if unknown or correct:
            what = f"no implementation called {unknown[0]!r}" if unknown else f"{correct[0]} is not known-bad"
            raise ContendError(
                f"--only: {what}; hunt runs known-bad ones: {', '.join(i.name for i in known_bad())}"
            )
    started = time.monotonic()
    deadline = started + args.budget
    rows: list[HuntResult] = []
    interrupted: interrupt.Interrupted | None = None
    with open_target(args.redis_url, args.redis_server) as target:
        out.print(
            escape(
                f"contend hunt on {target.description}: {len(chosen)} known-bad implementation(s) × "
                f"{args.runs} seed(s), up to {args.max_examples} examples each, budget {args.budget:g} s"
            ),
            soft_wrap=True,
        )
        total = len(chosen) * args.runs
        with Reporter(err, "contend hunt", total, quiet=args.quiet) as progress:
            try:
                for impl in chosen:
                    progress.working(f"{impl.name} seed 0")
                    row = hunt(
                        impl,
                        target,
                        args.runs,
                        args.max_examples,
                        on_run=progress.finished,
                        deadline=deadline,
                        shrink=not args.no_shrink,
                        on_shrink=progress.working,
                    )
                    rows.append(row)
                    out.print(escape(row.line()), soft_wrap=True)
                    if row.not_run:
                        break
            except interrupt.Interrupted as exc:
                interrupted = exc
            except Exception:
                # Hypothesis can turn the interrupt into an error of its own (an assertion in its
                # handler when the signal came as the search began): after a stop signal, that error
                # is the interrupt.
                if (interrupted := interrupt.arrived()) is None:
                    raise
    interrupted = interrupted or interrupt.arrived()
    code, verdict, headline = _verdict(rows, chosen, interrupted)
    style = {0: "bold green", 1: "bold red"}.get(code, "bold yellow")
    out.print(f"[{style}]{escape(headline)}[/] ({time.monotonic() - started:.0f} s)", soft_wrap=True)
    write_document(
        args.json,
        document(
            "hunt",
            code,
            verdict,
            target=target.description,
            runs=args.runs,
            max_examples=args.max_examples,
            budget_seconds=args.budget,
            seconds=round(time.monotonic() - started, 3),
            implementations=[r.to_json() for r in rows],
            not_hunted=[i.name for i in chosen[len(rows) :]],
        ),
    )
    return code


def _verdict(
    rows: list[Any], chosen: list[Any], interrupted: interrupt.Interrupted | None
) -> tuple[int, str, str]:
    """(exit code, the JSON verdict, one line)."""
    missed = [r for r in rows if r.done > r.caught]
    open_ = [r for r in rows if r.not_run or r.flaky]
    left = len(chosen) - len(rows)
    if interrupted is not None:
        return (
            interrupted.code,
            "interrupted",
            f"interrupted ({interrupted}) after {len(rows)} of {len(chosen)} rows",
        )
    if missed:
        names = ", ".join(f"{r.name} ({r.done - r.caught} of {r.done})" for r in missed)
        return ExitCode.FAILED, "missed", f"missed in some runs: {names}"
    if open_ or left:
        return (
            ExitCode.INCONCLUSIVE,
            "inconclusive",
            f"every run that gave a verdict caught its implementation; {len(open_)} row(s) incomplete "
            f"and {left} not hunted (the budget ran out, or Hypothesis called a run flaky): raise --budget",
        )
    return ExitCode.OK, "caught", f"every one of {len(rows)} known-bad implementation(s) caught in every run"
