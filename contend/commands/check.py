"""`contend check`."""

from __future__ import annotations

import argparse
import time

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from contend.battery import (
    BATTERIES,
    catalog_subjects,
    evidence_lines,
    results_table,
    run_battery,
    user_subject,
    write_json,
)
from contend.checks import CheckOptions, CheckResult
from contend.target import open_target


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    options = CheckOptions(
        seed=args.seed,
        serial_names=args.serial_names,
        burst_clients=args.burst_clients,
        burst_rounds=args.burst_rounds,
    )
    with open_target(args.redis_url, args.redis_server) as target:
        out.print(f"contend check on {target.description}")
        client = target.client()
        run_ns = target.namespace(args.namespace, client=client)
        try:
            if args.impl:
                subjects = [user_subject(args.impl, args.kind, target)]
            else:
                subjects = catalog_subjects(args.family or list(BATTERIES), args.only or ())
            total = sum(len(BATTERIES[s.family]) for s in subjects)
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
