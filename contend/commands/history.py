"""`contend history check`: is a recorded history linearizable?"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from contend import exitcodes, history
from contend.ci.document import document
from contend.ci.junit import Case, Outcome, write_junit
from contend.ci.summary import append_summary, code_block, table
from contend.commands.arguments import add_renamed, positive_float, positive_int, warn_renamed
from contend.commands.names import COMMANDS
from contend.commands.outputs import STDOUT, add_ci_options, report_console, resolve_outputs, write_document
from contend.exitcodes import ExitCode
from contend.history.api import counted, named
from contend.history.invariants import Violation
from contend.history.models import HISTORY_MODELS, MODELS, Options
from contend.history.records import FORMATS, HistoryError
from contend.history.verdict import Linearizability, Verdict

#: Exit codes (contend.exitcodes), and which one a batch of files ends with: the worst, in this order.
LINEARIZABLE, NOT_LINEARIZABLE, BAD_INPUT, UNKNOWN = (
    ExitCode.OK,
    ExitCode.FAILED,
    ExitCode.BAD_INPUT,
    ExitCode.INCONCLUSIVE,
)
SEVERITY: dict[int, int] = {LINEARIZABLE: 0, UNKNOWN: 1, BAD_INPUT: 2, NOT_LINEARIZABLE: 3}


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "history",
        help=COMMANDS["history"],
        description="Work with recorded operation histories.",
    )
    actions = parser.add_subparsers(dest="history_command", metavar="ACTION", required=True)
    models = "\n".join(
        f"  {m.name}: {m.summary}.\n    operations: {', '.join(m.operations)}"
        for m in HISTORY_MODELS.values()
    )
    check = actions.add_parser(
        "check",
        help="is the history linearizable with respect to a model?",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Check each FILE (native JSONL, Jepsen EDN: maps one per line or one vector or list of "
        "them, or jepsen.util log "
        "lines) against a sequential model, partition by partition, plus the model's linear-time "
        "invariants. The JSONL format: docs/HISTORY.md.\n\n"
        "Strict where it matters: an operation the model does not know is an error (exit 2), and "
        "so is a file that is not a history. A history in which no operation took effect (each "
        "failed, ended in info or never completed) is linearizable, as Jepsen's checkers and "
        "Porcupine have it; one with no client operation at all (an empty file, nemesis events "
        "only) is linearizable with a warning that nothing was checked, or exit 2 with "
        "--require-ops.\n\n"
        "Exit 0 linearizable (and every invariant holds), 1 not linearizable or an invariant "
        "broken, 2 bad input, 3 unknown (the time budget ran out). With several files, one line "
        "each and the worst exit code: 1, then 2, then 3, then 0.",
        epilog="models:\n" + models + "\n\n" + exitcodes.epilog(),
    )
    check.add_argument("files", type=Path, nargs="*", metavar="FILE", help="the history file(s)")
    check.add_argument("--model", required=True, choices=MODELS, help="the sequential specification")
    add_renamed(
        check,
        "--search-seconds",
        "--timeout",
        type=positive_float,
        default=60.0,
        metavar="S",
        help="time budget of each file's linearizability search, in seconds; past it the verdict is "
        "unknown (exit 3), with the partitions decided so far and the ones left open; reading the "
        "file and the linear-time invariants come on top (default %(default)s)",
    )
    check.add_argument(
        "--all",
        action="store_true",
        dest="all_partitions",
        help="search every partition, not only up to the first one proven not linearizable",
    )
    check.add_argument(
        "--lenient",
        action="store_true",
        help="skip operations the model does not know (and say how many) instead of refusing the file",
    )
    check.add_argument(
        "--require-ops",
        action="store_true",
        help="a history with no client operation (an empty file, nemesis events only) is an error "
        "(exit 2) instead of a pass with a warning",
    )
    check.add_argument("--format", choices=FORMATS, help="the files' format (default: guessed per file)")
    add_ci_options(check, "the verdict of every file", bare_json=True)
    check.add_argument("--html", type=Path, metavar="OUT", help="write a self-contained HTML timeline to OUT")
    check.add_argument(
        "--lease-expiry",
        action="store_true",
        help="mutex: a lease may expire unseen before any operation (real TTLs in a stress run)",
    )
    check.add_argument(
        "--ttl-ms",
        type=positive_int,
        metavar="MS",
        help="mutex: the lease every acquire asked for; adds the lease-validity invariant",
    )
    check.add_argument(
        "--may-refuse",
        action="store_true",
        help="mutex: an acquire may return False while the lock is free (a try-lock that loses to "
        "contention, as Redlock's does when a vote splits over its masters); granting a held lock "
        "stays a violation",
    )
    check.add_argument(
        "--linear-only",
        action="store_true",
        help="skip the search; run only the linear-time invariants (for histories too long to search)",
    )
    return parser


@dataclass
class FileResult:
    """One file's outcome: its exit code, and the verdict and violations (or the error)."""

    path: Path
    code: int
    verdict: Verdict | None = None
    violations: list[Violation] = field(default_factory=list)
    invariants: list[str] = field(default_factory=list)
    lenient_skipped: dict[str, int] = field(default_factory=dict)
    error: str | None = None
    seconds: float = 0.0
    warning: str | None = None

    def verdict_word(self) -> str:
        """linearizable, not-linearizable, invariant-broken (the search passed, or was skipped, and
        an invariant broke), bad-input or unknown."""
        linear = self.verdict is None or self.verdict.outcome is not Linearizability.NOT_LINEARIZABLE
        if self.code == NOT_LINEARIZABLE and linear and self.violations:
            return "invariant-broken"
        return VERDICTS[self.code]

    def evidence(self) -> str:
        """What shows the file is not linearizable: the partitions' explanations and the violations."""
        lines = [self.line()]
        if self.verdict is not None:
            lines += [p.explain() for p in self.verdict.partitions[:10]]
        lines += [str(v) for v in self.violations[:50]]
        return "\n".join(lines)

    def line(self) -> str:
        """One line for a batch: the file and its verdict."""
        if self.error is not None:
            where, rest = str(self.path), self.error
            if rest.startswith(where):  # say the file once: `f.jsonl: error: line 3: …`
                rest = rest[len(where) :].lstrip(": ")
                rest = f"line {rest}" if rest[:1].isdigit() else rest
            return f"{where}: error: {rest}"
        parts = [self.verdict.summary()] if self.verdict is not None else ["search skipped (--linear-only)"]
        if self.violations:
            parts.append(f"{len(self.violations)} invariant violation(s), first: {self.violations[0]}")
        if self.lenient_skipped:
            parts.append(f"--lenient skipped {counted(self.lenient_skipped)}")
        return f"{self.path}: " + "; ".join(parts)

    def to_json(self, model: str) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "file": str(self.path),
            "model": model,
            "exit_code": self.code,
            "verdict": self.verdict_word(),
            "linearizability": self.verdict.to_json() if self.verdict else None,
            "invariants": [v.to_json() for v in self.violations],
            "invariants_checked": self.invariants,
        }
        if self.lenient_skipped:
            doc["lenient_skipped"] = self.lenient_skipped
        if self.warning is not None:
            doc["warning"] = self.warning
        if self.error is not None:
            doc["error"] = self.error
        return doc


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    json_to = _json_target(args)
    out = report_console(args, out, err)
    files: list[Path] = args.files
    if args.html and len(files) > 1:
        raise HistoryError("--html writes one timeline: give it one FILE, or leave --html out")
    results: list[FileResult] = []
    for path in files:
        began = time.perf_counter()
        try:
            result = check_file(path, args)
        except HistoryError as exc:
            result = FileResult(path, BAD_INPUT, error=named(path, str(exc)))
            result.seconds = time.perf_counter() - began
            if len(files) == 1:  # one file: the CLI prints the error and exits 2; --json says so too
                _write_outputs([*results, result], args, json_to)
                _write_ci([*results, result], args)
                args.outputs_ok = False  # written: the CLI's error path writes nothing more
                raise
        result.seconds = time.perf_counter() - began
        results.append(result)
        if result.warning is not None:
            err.print(f"[yellow]warning: {escape(result.warning)}[/]", soft_wrap=True)
        if len(files) > 1:
            style = {0: "green", 1: "bold red", 2: "red", 3: "yellow"}[result.code]
            out.print(f"[{style}]{escape(result.line())}[/]", soft_wrap=True)
    worst = max((r.code for r in results), key=SEVERITY.__getitem__, default=LINEARIZABLE)
    if len(files) == 1:
        _report_one(results[0], args, out, err)
    else:
        tally: dict[int, int] = {}
        for r in results:
            tally[r.code] = tally.get(r.code, 0) + 1
        names = {0: "linearizable", 1: "not linearizable", 2: "bad input", 3: "unknown"}
        counts = ", ".join(f"{tally[c]} {names[c]}" for c in (0, 1, 3, 2) if tally.get(c))
        out.print(f"{len(files)} files: {counts}; exit {worst}")
    _write_outputs(results, args, json_to)
    _write_ci(results, args)
    return worst


#: A word for each file's (and the batch's) exit code, in JSON and JUnit.
VERDICTS: dict[int, str] = {
    LINEARIZABLE: "linearizable",
    NOT_LINEARIZABLE: "not-linearizable",
    BAD_INPUT: "bad-input",
    UNKNOWN: "unknown",
}


def _json_target(args: argparse.Namespace) -> str | None:
    """--json's destination. The old bare `--json` before a FILE swallows that FILE as its
    value: a value that is an existing history (not .json) goes back to the FILEs."""
    value = args.json
    if value not in (None, STDOUT) and Path(value).suffix != ".json" and Path(value).is_file():
        args.files = [Path(value), *args.files]
        args.json = STDOUT
        warn_renamed("--json without a FILE", "--json -")
    if not args.files:
        raise HistoryError(
            "give the history FILE(s) to check, e.g. contend history check run.jsonl --model mutex"
        )
    resolve_outputs(args, inputs=args.files)
    target: str | None = args.json
    return target


def _write_outputs(results: list[FileResult], args: argparse.Namespace, json_to: str | None) -> None:
    """--json: one document for the whole batch."""
    if json_to is None:
        return
    worst = max((r.code for r in results), key=SEVERITY.__getitem__, default=LINEARIZABLE)
    docs = [r.to_json(args.model) for r in results]
    if len(results) == 1 and args.html and results[0].verdict is not None:
        docs[0]["html"] = str(args.html)
    word = results[0].verdict_word() if len(results) == 1 else VERDICTS[worst]
    write_document(json_to, document("history", worst, word, model=args.model, files=docs))


def _write_ci(results: list[FileResult], args: argparse.Namespace) -> None:
    """--junit-xml (a testcase per file) and the CI step summary (a row per file)."""
    cases = []
    for r in results:
        cls = f"contend.history.{args.model}"
        seconds = r.seconds
        if r.code == LINEARIZABLE:
            cases.append(Case(cls, str(r.path), seconds, Outcome.PASSED, text=r.line()))
        elif r.code == NOT_LINEARIZABLE:
            cases.append(Case(cls, str(r.path), seconds, Outcome.FAILURE, r.line(), r.evidence()))
        else:
            cases.append(Case(cls, str(r.path), seconds, Outcome.ERROR, r.line(), r.line()))
    write_junit(args.junit_xml, "contend history check", cases)
    worst = max((r.code for r in results), key=SEVERITY.__getitem__, default=LINEARIZABLE)
    rows = [[str(r.path), r.verdict_word(), r.line().removeprefix(f"{r.path}: ")] for r in results]
    parts = [f"## contend history check --model {args.model}\n\n**{VERDICTS[worst]}** (exit {int(worst)})"]
    parts.append(table(["file", "verdict", "detail"], rows))
    evidence = [line for r in results if r.code == NOT_LINEARIZABLE for line in r.evidence().splitlines()]
    if evidence:
        parts.append(code_block(evidence[:200]))
    append_summary("\n\n".join(parts))


def check_file(path: Path, args: argparse.Namespace) -> FileResult:
    """Read, pair and check one file; HistoryError for bad input (the message names the file)."""
    checked = history.check_file(
        path,
        args.model,
        fmt=args.format,
        timeout=args.search_seconds,
        lenient=args.lenient,
        all_partitions=args.all_partitions,
        linear_only=args.linear_only,
        require_ops=args.require_ops,
        options=Options(lease_expiry=args.lease_expiry, ttl_ms=args.ttl_ms, may_refuse=args.may_refuse),
    )
    return FileResult(
        path,
        checked.exit_code,
        checked.verdict,
        checked.violations,
        checked.invariants,
        lenient_skipped=checked.lenient_skipped,
        warning=checked.warning,
    )


def _report_one(result: FileResult, args: argparse.Namespace, out: Console, err: Console) -> None:
    verdict, violations = result.verdict, result.violations
    if args.html:
        if verdict is None:
            err.print("[yellow]--html needs the search; skipped with --linear-only[/]")
        else:
            from contend.history.timeline import write_timeline

            write_timeline(verdict, args.html, title=f"{result.path.name} · {args.model}")
    if result.lenient_skipped:
        out.print(
            f"[yellow]--lenient: skipped {escape(counted(result.lenient_skipped))}, "
            f"operations the {escape(args.model)} model does not know[/]",
            soft_wrap=True,
        )
    if verdict is not None:
        style = {0: "bold green", 1: "bold red", 3: "bold yellow"}[verdict.outcome.exit_code]
        out.print(f"[{style}]{escape(verdict.summary())}[/]", soft_wrap=True)
        for p in verdict.partitions[:10]:
            out.print(escape(p.explain()), soft_wrap=True)
        if len(verdict.partitions) > 10:
            out.print(f"… and {len(verdict.partitions) - 10} more partition(s)")
    names = ", ".join(result.invariants)
    if violations:
        out.print(f"[bold red]{len(violations)} invariant violation(s)[/] ({names})")
        for v in violations[:20]:
            out.print(f"  {escape(str(v))}", soft_wrap=True)
        if len(violations) > 20:
            out.print(f"  … and {len(violations) - 20} more")
    elif result.invariants:
        out.print(f"invariants hold: {names}")
    if args.html and verdict is not None:
        out.print(f"timeline: {escape(str(args.html))}")
