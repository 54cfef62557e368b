"""The options every command shares for what it writes besides its text report.

`--json FILE`: one JSON document per run, with the verdict and exit code.

Every document has the same envelope: `command`, `contend` (the version), `schema` (the
name of the JSON Schema in contend/schemas/ that describes it), `verdict` and `exit_code`
(the table of contend.exitcodes); the rest is the command's own. `-` writes to stdout.
The bare `--json` of older releases (history check, stress: JSON to stdout) is accepted
with a warning.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contend.ci.document import document
from contend.commands.arguments import warn_renamed
from contend.errors import ContendError

#: What `--json -` and the old bare `--json` mean: the document goes to stdout.
STDOUT = "-"
_BARE = "\0bare"


def add_json_option(parser: Any, what: str, *, bare: bool = False) -> None:
    """Add `--json FILE` ("-": stdout); with `bare`, a bare `--json` (the old spelling in the
    commands that had it) means `--json -`."""
    old = {"nargs": "?", "const": _BARE} if bare else {}
    parser.add_argument(
        "--json",
        **old,
        metavar="FILE",
        help=f"write {what} as one JSON document to FILE ('-': stdout, and the text report goes to stderr), "
        "with the verdict and the exit code inside (schema: contend/schemas/)",
    )


def add_ci_options(
    parser: argparse.ArgumentParser, what: str, *, junit: bool = True, bare_json: bool = False
) -> None:
    """--json FILE, --junit-xml FILE (when the command has testcases), -q/--quiet."""
    group = parser.add_argument_group("output")
    add_json_option(group, what, bare=bare_json)
    if junit:
        group.add_argument(
            "--junit-xml",
            metavar="FILE",
            help="write the results as JUnit XML to FILE, for CI test tabs (failures carry the evidence)",
        )
    group.add_argument(
        "-q", "--quiet", action="store_true", help="no progress on stderr (the report is still printed)"
    )


def report_console(args: argparse.Namespace, out: Any, err: Any) -> Any:
    """Where the text report goes: stdout, or stderr when the JSON document takes stdout (--json -)."""
    return err if getattr(args, "json", None) == STDOUT else out


def resolve_outputs(args: argparse.Namespace, inputs: Sequence[Path] = ()) -> None:
    """Before anything runs: resolve the old bare --json, and refuse output paths that cannot be
    written, that name one of the `inputs`, or that two outputs share (one would overwrite the
    other). Afterwards a run that ends early may write its --json and --junit-xml (write_failure)."""
    args.json = json_target(args)
    files = {"--json": args.json if args.json != STDOUT else None}
    files |= {"--junit-xml": getattr(args, "junit_xml", None), "--html": getattr(args, "html", None)}
    given = {option: Path(path) for option, path in files.items() if path}
    for option, path in given.items():
        check_output_file(path, option)
    seen: dict[Path, str] = {}
    for option, path in given.items():
        where = path.resolve()
        if where in {i.resolve() for i in inputs}:
            raise ContendError(f"{option} {path} is one of the inputs to check; write it elsewhere")
        if where in seen:
            raise ContendError(f"{seen[where]} and {option} both write {path}; give each its own file")
        seen[where] = option
    out = getattr(args, "out", None)
    if out is not None and Path(out).exists() and not Path(out).is_dir():
        raise ContendError(
            f"--out {out}: is a file, and --out is the directory the run writes into; choose a directory"
        )
    args.outputs_ok = True


def json_target(args: argparse.Namespace) -> str | None:
    """The --json destination after the old bare form is resolved: None, STDOUT or a path."""
    value = getattr(args, "json", None)
    if value == _BARE:
        warn_renamed("--json without a FILE", "--json -")
        return STDOUT
    if value is not None and value != STDOUT:
        check_output_file(value, "--json")
    return None if value is None else str(value)


def check_output_file(path: str | Path, option: str) -> None:
    """Refuse, before anything runs, an output path that cannot be a file we write."""
    p = Path(path)
    if p.is_dir():
        raise ContendError(f"{option} {p}: is a directory; give a file name such as {p / 'result'}")
    parent = p.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise ContendError(f"{option} {p}: {parent} is not a directory; choose another path")
    try:  # a file made and removed at once: the run's result must not be lost at its end
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise ContendError(
            f"{option} {p}: cannot write in {parent} ({exc.strerror or exc}); choose another path"
        ) from None


def write_document(destination: str | Path | None, doc: dict[str, Any]) -> None:
    """Write `doc` to the --json destination (nothing when None); a file is replaced whole."""
    if destination is None:
        return
    text = json.dumps(doc, indent=2, default=repr, ensure_ascii=False) + "\n"
    if str(destination) == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(destination)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)
    except OSError as exc:
        raise ContendError(
            f"--json {path}: cannot write it ({exc.strerror or exc}); choose another path"
        ) from None


def write_failure(args: argparse.Namespace, code: int, verdict: str, message: str) -> None:
    """A run that ended before its report (bad input, an interrupt): its --json document and
    --junit-xml say so, so a CI job never reads an older run's verdict from the same path."""
    if not getattr(args, "outputs_ok", False):  # the output paths were never checked: touch nothing
        return
    command = str(getattr(args, "command", "") or "")
    value = getattr(args, "json", None)
    destination = STDOUT if value == _BARE else value
    with contextlib.suppress(ContendError, OSError):
        write_document(destination, document(command, code, verdict, error=message))
    junit = getattr(args, "junit_xml", None)
    if junit:
        from contend.ci.junit import Case, Outcome, write_junit

        case = Case(f"contend.{command}", verdict, 0.0, Outcome.ERROR, message, message)
        with contextlib.suppress(ContendError, OSError):
            write_junit(junit, f"contend {command}", [case])
