"""`contend scoreboard`: which Python Redis libraries (locks, semaphores, queues, rate limiters) keep their promises."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from contend import exitcodes, interrupt
from contend.check.framework import CheckOptions, CheckResult
from contend.check.noise import Noise, quieted
from contend.check.schedule import parse_replay
from contend.ci.document import document
from contend.ci.summary import append_summary
from contend.commands.arguments import HelpFormatter, non_negative_int, positive_float, positive_int
from contend.commands.names import COMMANDS
from contend.commands.outputs import add_ci_options, report_console, resolve_outputs, write_document
from contend.commands.progress import Reporter
from contend.errors import ContendError
from contend.exitcodes import ExitCode
from contend.schedule.gate import check_redis_py
from contend.scoreboard import render
from contend.scoreboard.confirm import CONFIRM_ATTEMPTS, FULL_EXAMPLES, QUICK_EXAMPLES
from contend.scoreboard.environments import Environment, cache_root
from contend.scoreboard.isolated import DEFAULT_JOBS, Runner
from contend.scoreboard.libraries import LIBRARIES, by_key
from contend.scoreboard.library import Library
from contend.scoreboard.run import LibraryResult, Scoreboard, run_scoreboard
from contend.servers.target import open_target

#: Real-time budget of one check: library code may hang.
CHECK_SECONDS = 30.0
DEFAULT_OUT = Path("reports/scoreboard")


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "scoreboard",
        parents=[common],
        help=COMMANDS["scoreboard"],
        description="Run each library (unmodified, behind an adapter in contend/adapters/) through "
        "its family's battery (locks, semaphores, queues, rate limiters) and the schedule check, judged on what its own "
        "documentation claims. Prints library × property, writes report.md and index.html with "
        "every counterexample (shrunk interleaving, replay command, the defect in the library's "
        "source). Each library runs in an environment of its own that contend makes with pip under "
        "its cache folder ($CONTEND_CACHE_DIR, else ~/.cache/contend): nothing is installed into "
        "yours, and libraries that install the same import name never meet. Exit 0 when every "
        "verdict matches the expectations recorded in contend/scoreboard/expected.py, 1 when one "
        "does not, 3 when every verdict does but a recorded finding was not met this run, even by "
        "its checks run again (--confirm), 2 on bad input; 130/143 when interrupted (the rows so "
        "far are printed).",
        formatter_class=HelpFormatter,
        epilog=exitcodes.epilog(),
    )
    parser.add_argument(
        "--lib",
        action="append",
        default=[],
        metavar="NAME",
        help=f"only this row (repeatable): {', '.join(lib.key for lib in LIBRARIES)}",
    )
    parser.add_argument(
        "--environment",
        choices=("isolated", "current"),
        default="isolated",
        help="isolated (default): each library in its own environment, made on first use and kept; "
        "current: import the libraries from this Python's environment (pip install 'contend[libs]'), "
        "skipping the rows whose library is not there",
    )
    parser.add_argument(
        "--jobs",
        type=positive_int,
        default=DEFAULT_JOBS,
        metavar="N",
        help="rows run at once, each in a worker process (isolated only; default %(default)s)",
    )
    parser.add_argument(
        "--latest",
        action="store_true",
        help="install each library's newest release instead of the version its verdicts were "
        "recorded with (isolated only): how to try an upgrade",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"fewer examples ({QUICK_EXAMPLES} interleavings per row instead of {FULL_EXAMPLES}, "
        "smaller bursts): every row in about two minutes once the environments exist",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        metavar="DIR",
        help="where report.md and index.html go (default: %(default)s)",
    )
    parser.add_argument("--no-write", action="store_true", help="print the table only, write no report")
    parser.add_argument(
        "--replay",
        metavar="VERSION:BLOB",
        help="run the schedule check on one recorded example (printed with a counterexample) "
        "against one row (--lib NAME)",
    )
    parser.add_argument(
        "--schedule-examples",
        type=positive_int,
        metavar="N",
        help="interleavings per row (overrides the default of the mode)",
    )
    parser.add_argument(
        "--check-seconds",
        type=positive_float,
        default=CHECK_SECONDS,
        metavar="S",
        help="real-time budget of one check; past it the check is inconclusive (default %(default)g)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random checks (default 0)")
    parser.add_argument(
        "--confirm",
        type=non_negative_int,
        default=CONFIRM_ATTEMPTS,
        metavar="N",
        help="attempts at a recorded finding a row's run did not meet (one whose check depends on "
        "real time or on a larger search than --quick's): its checks again, at the full board's "
        "sizes, with seeds --seed+1, +2, ... until one meets it; their results join the row as "
        "'CHECK · again, seed S' (default %(default)s; 0: none, and such a finding is not met)",
    )
    add_ci_options(parser, "every row's verdicts", junit=False)
    return parser


def options_for(args: argparse.Namespace) -> CheckOptions:
    """The battery's sizes for the mode asked for."""
    examples = args.schedule_examples or (QUICK_EXAMPLES if args.quick else FULL_EXAMPLES)
    if args.quick:
        return CheckOptions(
            seed=args.seed,
            model_ops=100,
            burst_clients=8,
            burst_rounds=4,
            schedule_examples=examples,
            check_seconds=args.check_seconds,
            replay=args.replay,
        )
    return CheckOptions(
        seed=args.seed, schedule_examples=examples, check_seconds=args.check_seconds, replay=args.replay
    )


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    resolve_outputs(args)
    out = report_console(args, out, err)
    libraries = by_key(args.lib)
    if args.replay:
        parse_replay(args.replay)
        if len(args.lib) != 1:
            raise ContendError("--replay replays one row's example: give exactly one --lib NAME")
    check_redis_py()
    options = options_for(args)
    command = shlex.join(["contend", "scoreboard", *sys.argv[2:]]) if sys.argv[1:2] == ["scoreboard"] else ""
    board: Scoreboard | None = None
    noise = Noise()
    interrupted: interrupt.Interrupted | None = None

    def last_words() -> None:
        _summary(board, out, args, command, interrupted=interrupt.forced_exit_code())

    interrupt.on_forced_exit(last_words)
    with open_target(args.redis_url, args.redis_server) as target:
        board = Scoreboard(target.description, quick=args.quick)
        out.print(escape(f"contend scoreboard on {target.description}"), soft_wrap=True)
        with Reporter(err, "contend scoreboard", len(libraries), quiet=args.quiet) as progress:
            current: list[str] = []

            def started(library: Library) -> None:
                if current:
                    progress.finished(f"{current[0]}: done")
                current[:] = [library.key]
                progress.working(library.key)

            def checked(subject: Any, result: CheckResult) -> None:
                progress.status(
                    f"{subject.name} · {result.check}: {result.status} ({result.seconds:.1f} s)", every=0
                )

            def installing(library: Library, env: Environment) -> None:
                progress.status(
                    f"{library.key}: making its environment ({' '.join((*env.no_deps, *env.requirements))})",
                    every=0,
                )

            try:
                if args.environment == "isolated":
                    runner = Runner(
                        target,
                        options,
                        root=cache_root(),
                        jobs=args.jobs,
                        latest=args.latest,
                        redis_server=args.redis_server,
                        namespace=args.namespace,
                        on_result=checked,
                        on_library=lambda lib: progress.status(f"{lib.key}: running", every=0),
                        on_install=installing,
                        on_done=lambda res: progress.finished(f"{res.library.key}: done"),
                        confirm_attempts=args.confirm,
                    )
                    try:
                        runner.run_all(libraries, board, interrupt.STOP)
                    finally:
                        runner.stop()
                else:
                    with quieted() as noise:
                        run_scoreboard(
                            libraries,
                            target,
                            options,
                            redis_server=args.redis_server,
                            on_result=checked,
                            on_library=started,
                            stop=interrupt.STOP,
                            board=board,
                            namespace=args.namespace,
                            confirm_attempts=args.confirm,
                        )
            except interrupt.Interrupted as exc:
                interrupted = exc
    interrupted = interrupted or interrupt.arrived()  # also when the exception was swallowed
    code = _summary(
        board,
        out,
        args,
        command or "contend scoreboard",
        interrupted=None if interrupted is None else interrupted.code,
    )
    if noise.summary():
        out.print(f"[dim]{escape(noise.summary())}[/]", soft_wrap=True)
    if interrupted is not None:
        out.print(
            f"[bold yellow]interrupted[/] ({escape(str(interrupted))}): the rows so far are above; servers stopped"
        )
        return interrupted.code
    return code


def _summary(
    board: Scoreboard | None,
    out: Console,
    args: argparse.Namespace,
    command: str,
    *,
    interrupted: int | None,
) -> int:
    """Print the table, skips and surprises; write the report and --json; the exit code."""
    if board is None or not board.results:
        return 0
    out.print(render.rich_table(board))
    for result in board.results:
        if result.skipped:
            out.print(f"[yellow]skipped[/] {escape(result.skipped)}", soft_wrap=True)
    if not args.no_write and interrupted is None and not args.replay:
        written = render.write(board, args.out, command)
        out.print(escape("report: " + ", ".join(str(p) for p in written)), soft_wrap=True)
    code, verdict, headline = _verdict(board, args)
    if args.replay:
        row = board.results[0].row
        for r in row.results if row else ():
            out.print(escape(f"replayed: {r.status}: {r.detail}"), soft_wrap=True)
    elif code == ExitCode.FAILED:
        out.print("[bold red]not as recorded in contend/scoreboard/expected.py[/]:")
        for line in board.surprises:
            out.print(f"  {escape(line)}", soft_wrap=True)
        out.print(f"[bold red]{escape(headline)}[/]", soft_wrap=True)
    elif code == ExitCode.INCONCLUSIVE:
        out.print(f"[bold yellow]{escape(headline)}[/] (recorded in contend/scoreboard/expected.py):")
        for line in board.not_met:
            out.print(f"  {escape(line)}", soft_wrap=True)
    else:
        out.print(f"[bold green]{escape(headline)}[/]", soft_wrap=True)
    write_document(
        args.json,
        document(
            "scoreboard",
            code if interrupted is None else interrupted,
            "interrupted" if interrupted is not None else verdict,
            headline=headline,
            server=board.server,
            quick=board.quick,
            seconds=round(board.seconds, 3),
            libraries=[_row_json(r) for r in board.results],
            surprises=board.surprises,
            not_met=board.not_met,
            findings=render.findings_count(board),
        ),
    )
    append_summary(render.markdown_summary(board, headline))
    return code


def _verdict(board: Scoreboard, args: argparse.Namespace) -> tuple[ExitCode, str, str]:
    """The exit code, a verdict word and a headline."""
    if args.replay:
        return ExitCode.OK, "replayed", "replayed"
    tally = render.findings_tally(board)
    if board.surprises:
        return (
            ExitCode.FAILED,
            "not-as-recorded",
            f"{len(board.surprises)} verdict(s) not as recorded · {tally}",
        )
    if board.not_met:
        return (
            ExitCode.INCONCLUSIVE,
            "findings-not-met",
            f"{len(board.not_met)} recorded finding(s) not met this run: the board did not reach its "
            f"verdicts (run it again, or with a larger --confirm) · {tally}",
        )
    ran = [r for r in board.results if not r.skipped]
    skipped = len(board.results) - len(ran)
    also = f", {skipped} not run (each says why)" if skipped else ""
    return (
        ExitCode.OK,
        "as-recorded",
        f"every verdict as recorded: {len(ran)} row(s){also} · {tally} · {board.seconds:.0f} s",
    )


def _row_json(result: LibraryResult) -> dict[str, Any]:
    lib = result.library
    return {
        "library": lib.key,
        "title": lib.title,
        "family": lib.family,
        "distribution": lib.distribution,
        "version": result.version or None,
        "skipped": result.skipped or None,
        "seconds": round(result.seconds, 3),
        "fidelity": {"reason": result.fidelity, "seen": result.fidelity_seen, "error": result.fidelity_error}
        if result.fidelity
        else None,
        "properties": {
            p: {"verdict": result.verdict(p), "expected": result.expected(p)} for p in result.properties
        },
        "surprises": result.surprises(),
        "not_met": result.not_met(),
        "findings": [render.finding_json(result, prop) for prop in result.properties if result.finding(prop)],
    }
