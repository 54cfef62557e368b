"""A GitHub Actions step summary: Markdown appended to $GITHUB_STEP_SUMMARY when it is set.

Only text: tables and counterexamples in code blocks, no images (a step summary
cannot show local files).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

#: The variable GitHub Actions sets to the file of the current step's summary.
ENV_VAR = "GITHUB_STEP_SUMMARY"
#: A summary is limited to 1 MiB per step; stay well below it.
MAX_CHARS = 200_000


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """A Markdown table; a cell's pipes and newlines are escaped."""

    def cell(v: str) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    lines = ["| " + " | ".join(cell(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    return "\n".join(lines)


def code_block(lines: Sequence[str]) -> str:
    """Lines as a fenced block (a fence inside is broken up)."""
    body = "\n".join(line.replace("```", "` ` `") for line in lines)
    return f"```\n{body}\n```"


def append_summary(markdown: str) -> bool:
    """Append to $GITHUB_STEP_SUMMARY if it is set; whether it was written. A summary that
    cannot be written is not worth failing the run for: it is skipped with a warning."""
    path = os.environ.get(ENV_VAR)
    if not path:
        return False
    if len(markdown) > MAX_CHARS:
        markdown = markdown[:MAX_CHARS] + "\n\n… (cut: the rest is in the job's log)\n"
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(markdown.rstrip("\n") + "\n\n")
    except OSError as exc:
        import sys

        sys.stderr.write(f"contend: warning: ${ENV_VAR} ({path}) not written: {exc}\n")
        return False
    return True


def rich_table(rich: Any) -> str:
    """A rich.table.Table as Markdown (its title as a heading line, markup stripped)."""
    from rich.text import Text

    def plain(cell: Any) -> str:
        return cell.plain if isinstance(cell, Text) else Text.from_markup(str(cell)).plain

    header = [plain(c.header) for c in rich.columns]
    columns = [[plain(cell) for cell in c.cells] for c in rich.columns]
    rows = [list(r) for r in zip(*columns, strict=True)] if columns else []
    title = f"**{plain(rich.title)}**\n\n" if rich.title else ""
    caption = f"\n\n{plain(rich.caption)}" if rich.caption else ""
    return title + table(header, rows) + caption
