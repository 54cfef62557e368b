"""`contend check`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from contend.check.battery import (
    BATTERIES,
    catalog_subjects,
    evidence_lines,
    results_table,
    run_battery,
    user_factory,
    user_subject,
    write_json,
)
from contend.check.framework import CheckOptions, CheckResult
from contend.commands.arguments import positive_int
from contend.errors import ContendError
from contend.impl import catalog
from contend.schedule.gate import check_redis_py
from contend.target.target import open_target


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "check",
        parents=[common],
        help="run the correctness battery over every implementation",
        description="Run every check of each implementation's family and print implementation × "
        "check. Correct implementations must pass; known-bad ones must be caught. Exit 0 when "
        "both hold, 1 when a correct one fails or a known-bad one survives, 2 on bad input.",
    )
    families = sorted(BATTERIES)
    parser.add_argument("--family", action="append", choices=families, help="only this family (repeatable)")
    parser.add_argument(
        "--only", action="append", metavar="NAME", help="only this catalog implementation (repeatable)"
    )
    parser.add_argument(
        "--impl", metavar="MODULE:FACTORY", help="check your own implementation instead of the catalog"
    )
    parser.add_argument(
        "--kind", choices=families, default="registry", help="protocol --impl follows (default: registry)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random model check (default 0)")
    parser.add_argument(
        "--serial-names",
        type=positive_int,
        default=CheckOptions.serial_names,
        metavar="N",
        help="names in the serial test (default %(default)s; seed 000 uses 10000)",
    )
    parser.add_argument(
        "--burst-clients",
        type=positive_int,
        default=CheckOptions.burst_clients,
        metavar="N",
        help="clients released together in the burst checks (default %(default)s)",
    )
    parser.add_argument(
        "--burst-rounds",
        type=positive_int,
        default=CheckOptions.burst_rounds,
        metavar="N",
        help="rounds of the one-name burst (default %(default)s)",
    )
    parser.add_argument(
        "--schedule-examples",
        type=positive_int,
        default=CheckOptions.schedule_examples,
        metavar="N",
        help="state-machine examples (interleavings) per correct implementation (default %(default)s)",
    )
    parser.add_argument(
        "--no-shrink",
        action="store_true",
        help="report a schedule failure as found, without shrinking it to the minimal interleaving",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the results as JSON")
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print every check's detail, not only failures"
    )
    return parser


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    options = CheckOptions(
        seed=args.seed,
        serial_names=args.serial_names,
        burst_clients=args.burst_clients,
        burst_rounds=args.burst_rounds,
        schedule_examples=args.schedule_examples,
        shrink=not args.no_shrink,
    )
    for name in args.only or ():
        try:
            catalog.by_name(name)
        except KeyError as exc:
            raise ContendError(exc.args[0]) from None
    check_redis_py()  # the schedule check patches redis-py: refuse one it was not written for, up front
    if args.impl:
        user_factory(args.impl, args.kind)  # a bad --impl fails before a server starts
    with open_target(args.redis_url, args.redis_server) as target:
        out.print(f"contend check on {target.description}")
        client = target.client()
        run_ns = target.namespace(args.namespace, client=client)
        try:
            if args.impl:
                subjects = [user_subject(args.impl, args.kind, target)]
            else:
                subjects = catalog_subjects(args.family or list(BATTERIES), args.only or ())
            total = sum(len(s.checks()) for s in subjects)
            started = time.perf_counter()
            with Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=err,
                transient=True,
            ) as progress:
                task = progress.add_task("checking", total=total)

                def advance(subject: object, result: CheckResult) -> None:
                    progress.update(
                        task, advance=1, description=f"{getattr(subject, 'name', '')} · {result.check}"
                    )

                rows = run_battery(target, subjects, options, run_ns, advance)
        finally:
            run_ns.cleanup()
            client.close()

    out.print(results_table(rows))
    lines = evidence_lines(rows)
    if args.verbose:
        for row in rows:
            for r in row.results:
                out.print(f"  {row.subject.name} · {r.check} ({r.seconds:.2f} s): {r.detail}", soft_wrap=True)
    elif lines:
        out.print("[bold]evidence[/]")
        for line in lines:
            out.print(f"  {line}", soft_wrap=True)
    if args.json:
        write_json(rows, args.json, target.description)
    bad = [row for row in rows if not row.as_expected]
    elapsed = time.perf_counter() - started
    if bad:
        names = ", ".join(f"{row.subject.name} ({row.verdict})" for row in bad)
        out.print(f"[bold red]{len(bad)} implementation(s) not as expected[/]: {names} · {elapsed:.1f} s")
        return 1
    caught = sum(row.subject.known_bad for row in rows)
    out.print(
        f"[bold green]all as expected[/]: {len(rows) - caught} correct passed, "
        f"{caught} known-bad caught · {elapsed:.1f} s"
    )
    return 0
