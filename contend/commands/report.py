"""`contend report`: the contention report of a sweep directory."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from contend import exitcodes
from contend.ci.summary import append_summary
from contend.commands.arguments import HelpFormatter
from contend.commands.names import COMMANDS


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "report",
        help=COMMANDS["report"],
        description="Read a sweep directory (what `contend load --out DIR` wrote: DIR or DIR/raw) and "
        "write DIR/index.html (self-contained, plots embedded), DIR/report.md (for a CI step summary), "
        "the PNG plots and points.csv. Exit 2 when the directory holds no sweep.",
        formatter_class=HelpFormatter,
        epilog=exitcodes.epilog(),
    )
    parser.add_argument("sweep", type=Path, metavar="DIR", help="the sweep directory")
    parser.add_argument("--out", type=Path, metavar="DIR", help="write the report here instead of DIR")
    return parser


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    from contend.report.build import build_report

    built = build_report(args.sweep, args.out)
    broken = sum(1 for r in built.data.all_rows if not r.ok)
    out.print(escape(f"report: {built.html}"), soft_wrap=True)
    out.print(
        escape(f"markdown: {built.markdown}  ·  {len(built.plots)} plots  ·  figures: {built.points}"),
        soft_wrap=True,
    )
    append_summary(built.summary)
    if broken:
        err.print(f"[yellow]{broken} of {len(built.data.all_rows)} runs failed; the report marks them ✗[/]")
    return 0
