"""`contend history check`: is a recorded history linearizable?"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from contend.commands.arguments import positive_float
from contend.history.checker import Linearizability, Verdict, check_paired
from contend.history.formats import read_history
from contend.history.invariants import Violation
from contend.history.models import MODELS, model_for
from contend.history.records import FORMATS, HistoryError, pair


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "history",
        help="check a recorded history (JSONL, Jepsen EDN or log) for linearizability",
        description="Work with recorded operation histories.",
    )
    actions = parser.add_subparsers(dest="history_command", metavar="ACTION", required=True)
    check = actions.add_parser(
        "check",
        help="is the history linearizable with respect to a model?",
        description="Check FILE (native JSONL, Jepsen EDN maps one per line, or jepsen.util log lines) "
        "against a sequential model, partition by partition, plus the model's linear-time invariants. "
        "Exit 0 linearizable, 1 not linearizable (or an invariant broken), 3 unknown (a partition's "
        "time budget was spent), 2 bad input.",
    )
    check.add_argument("file", type=Path, metavar="FILE", help="the history")
    check.add_argument("--model", required=True, choices=MODELS, help="the sequential specification")
    check.add_argument(
        "--timeout",
        type=positive_float,
        default=60.0,
        metavar="S",
        help="search budget per partition in seconds; past it the verdict is unknown (default %(default)s)",
    )
    check.add_argument("--format", choices=FORMATS, help="the file's format (default: guessed)")
    check.add_argument("--json", action="store_true", help="print the verdict as JSON instead of text")
    check.add_argument("--html", type=Path, metavar="OUT", help="write a self-contained HTML timeline to OUT")
    check.add_argument(
        "--lease-expiry",
        action="store_true",
        help="mutex: a lease may expire unseen before any operation (real TTLs in a stress run)",
    )
    check.add_argument(
        "--linear-only",
        action="store_true",
        help="skip the search; run only the linear-time invariants (for histories too long to search)",
    )
    return parser


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    records = read_history(args.file, args.format)
    paired = pair(records)
    model, invariants = model_for(args.model, paired.calls, lease_expiry=args.lease_expiry)
    violations = [v for check in invariants for v in check(paired.calls)]
    verdict: Verdict | None = None
    if not args.linear_only:
        try:
            verdict = check_paired(paired, model, timeout=args.timeout)
        except HistoryError as exc:
            raise HistoryError(f"{args.file}: {exc}") from None
    code = _exit_code(verdict, violations)

    if args.html:
        if verdict is None:
            err.print("[yellow]--html needs the search; skipped with --linear-only[/]")
        else:
            from contend.history.timeline import write_timeline

            write_timeline(verdict, args.html, title=f"{args.file.name} · {args.model}")
    if args.json:
        doc: dict[str, Any] = {
            "file": str(args.file),
            "model": args.model,
            "exit_code": code,
            "verdict": verdict.to_json() if verdict else None,
            "invariants": [v.to_json() for v in violations],
        }
        if args.html and verdict is not None:
            doc["html"] = str(args.html)
        out.file.write(json.dumps(doc, indent=2, default=repr) + "\n")
        return code

    if verdict is not None:
        style = {0: "bold green", 1: "bold red", 3: "bold yellow"}[verdict.outcome.exit_code]
        out.print(f"[{style}]{escape(verdict.summary())}[/]", soft_wrap=True)
        for p in verdict.partitions[:10]:
            out.print(escape(p.explain()), soft_wrap=True)
        if len(verdict.partitions) > 10:
            out.print(f"… and {len(verdict.partitions) - 10} more partition(s)")
    names = ", ".join(getattr(c, "__name__", "?") for c in invariants)
    if violations:
        out.print(f"[bold red]{len(violations)} invariant violation(s)[/] ({names})")
        for v in violations[:20]:
            out.print(f"  {escape(str(v))}", soft_wrap=True)
        if len(violations) > 20:
            out.print(f"  … and {len(violations) - 20} more")
    elif invariants:
        out.print(f"invariants hold: {names}")
    if args.html and verdict is not None:
        out.print(f"timeline: {escape(str(args.html))}")
    return code


def _exit_code(verdict: Verdict | None, violations: Sequence[Violation]) -> int:
    if violations or (verdict is not None and verdict.outcome is Linearizability.NOT_LINEARIZABLE):
        return 1
    if verdict is not None and verdict.outcome is Linearizability.UNKNOWN:
        return 3
    return 0
