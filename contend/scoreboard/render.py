"""What `contend scoreboard` prints (a rich table) and writes (report.md and index.html).

The written report has the headline table, then a section per library: its configuration and
claims, every check it ran, and for each violation the shrunk interleaving, the replay
command, the defect in the library's own source and the standalone reproduction.
"""

from __future__ import annotations

import platform
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contend import __version__
from contend.check.battery import BATTERIES
from contend.check.framework import FAIL, INCONCLUSIVE, CheckResult
from contend.check.schedule import SCHEDULE
from contend.impl.catalog import PROPERTY_DESCRIPTIONS, PROPERTY_KINDS
from contend.report.render import Block, Code, Heading, Para, Table, html_page, markdown
from contend.scoreboard.expected import LIMITATIONS, RECORDED_WITH
from contend.scoreboard.run import FAIL_V, INCONCLUSIVE_V, NOT_CLAIMED, PASS_V, LibraryResult, Scoreboard


def columns(board: Scoreboard) -> list[str]:
    """The property columns: every property some row judges, in a fixed order."""
    seen = {p for r in board.results for p in r.properties}
    return [p for p in PROPERTY_DESCRIPTIONS if p in seen]


def _first(result: LibraryResult) -> CheckResult | None:
    """The first failed check of a row (the one whose counterexample the table sums up)."""
    failed = [r for r in result.row.results if r.status == FAIL] if result.row else []
    with_trace = [r for r in failed if "round_trips" in r.facts]
    chosen = with_trace or failed
    return chosen[0] if chosen else None


def cell(result: LibraryResult, prop: str) -> str:
    """A property's verdict in words: pass, FAIL (bug or documented), inconclusive, or — (not claimed)."""
    verdict = result.verdict(prop)
    if verdict == NOT_CLAIMED:
        return "—"
    text = {PASS_V: "pass", INCONCLUSIVE_V: "inconclusive"}.get(verdict, "FAIL")
    finding = result.finding(prop)
    if verdict == FAIL_V and finding is not None:
        text += " (documented)" if finding.documented else " (bug)"
    if verdict != result.expected(prop):
        text += f" ≠ expected {result.expected(prop)}"
    return text


def _size(result: LibraryResult) -> str:
    first = _first(result)
    if first is None:
        return ""
    if "round_trips" in first.facts:
        return f"{first.facts['clients']} clients, {first.facts['round_trips']} round trips"
    return f"({first.check} check)"


def _to_first(result: LibraryResult) -> str:
    first = _first(result)
    return f"{first.facts.get('seconds_to_first', first.seconds):.2f} s" if first else ""


def headline(board: Scoreboard) -> Table:
    """Library × property, with versions, the first counterexample and the time per row."""
    props = columns(board)
    rows = []
    for r in board.results:
        if r.skipped:
            rows.append((r.library.title, "not installed", *("" for _ in props), "", "", ""))
            continue
        rows.append(
            (
                r.library.title,
                r.version,
                *(cell(r, p) for p in props),
                _to_first(r),
                _size(r),
                f"{r.seconds:.0f} s",
            )
        )
    header = ("library", "version", *props, "found after", "shrunk to", "time")
    return Table(header, tuple(rows), "ll" + "l" * len(props) + "rlr")


def rich_table(board: Scoreboard) -> Any:
    """The headline table for the terminal."""
    from rich.table import Table as RichTable

    table = headline(board)
    out = RichTable(title="contend scoreboard", title_justify="left")
    for i, (name, align) in enumerate(zip(table.header, table.align, strict=True)):
        out.add_column(name, justify="right" if align == "r" else "left", no_wrap=i == 0)
    for row in table.rows:
        out.add_row(*(_color(c) for c in row))
    return out


def _color(text: str) -> str:
    if "≠" in text:
        return f"[bold red]{text}[/]"
    if text.startswith("FAIL"):
        return f"[red]{text}[/]"
    if text == "pass":
        return f"[green]{text}[/]"
    if text == "inconclusive":
        return f"[yellow]{text}[/]"
    return text


def blocks(board: Scoreboard, command: str) -> list[Block]:
    """The whole written report."""
    mode = "quick (fewer examples)" if board.quick else "full"
    out: list[Block] = [
        Heading("contend scoreboard: Python Redis lock libraries", 1),
        Para(
            f"Made with contend {__version__} on {board.server}, Python {platform.python_version()}, "
            f"{mode} run, {board.seconds:.0f} s in all: `{command}`. Each library runs unmodified "
            "behind an adapter (`contend/adapters/`) that uses its API as documented, and is judged "
            "only on what its documentation claims. A FAIL is a counterexample contend found and "
            "shrank; each one is reproduced by a standalone script (plain redis-py and threads) "
            "named below."
        ),
        headline(board),
        Para(
            "Properties: "
            + "; ".join(
                f"**{p}** ({PROPERTY_KINDS.get(p, 'safety')}): {PROPERTY_DESCRIPTIONS[p]}"
                for p in columns(board)
            )
            + ". — : not claimed by the library in this configuration."
        ),
    ]
    if board.surprises:
        out.append(
            Para("**Not as recorded in contend/scoreboard/expected.py:** " + "; ".join(board.surprises))
        )
    for result in board.results:
        out += library_blocks(result)
    return out


def library_blocks(result: LibraryResult) -> list[Block]:
    lib = result.library
    out: list[Block] = [Heading(f"{lib.title} {result.version}".rstrip(), 2)]
    if result.skipped:
        return [*out, Para(f"Skipped: {result.skipped}.")]
    recorded = RECORDED_WITH.get(lib.distribution)
    note = f" (expectations recorded with {recorded})" if recorded and recorded != result.version else ""
    out.append(
        Para(
            f"Configuration: {lib.configuration}. Claims: {', '.join(sorted(lib.claims))}. "
            f"Adapter: `{lib.adapter}`. {result.seconds:.1f} s{note}."
        )
    )
    if result.row is not None:
        out.append(
            Table(
                ("check", "property", "status", "seconds", "what it found"),
                tuple(
                    (r.check, r.prop or _judges(r.check), r.status, f"{r.seconds:.1f}", _one_line(r))
                    for r in result.row.results
                ),
                "lllrl",
            )
        )
    for prop in result.properties:
        failures = result.failures(prop)
        if failures:
            out += violation_blocks(result, prop, failures)
    limits = LIMITATIONS.get(lib.key, ())
    if limits:
        out.append(
            Para(
                "Not judged here: "
                + "; ".join(
                    f"{text} ({'documented' if documented else 'seen in the source'})"
                    for text, documented in limits
                )
                + "."
            )
        )
    return out


def violation_blocks(result: LibraryResult, prop: str, failures: Sequence[CheckResult]) -> list[Block]:
    finding = result.finding(prop)
    label = "" if finding is None else (" (documented)" if finding.documented else " (bug)")
    out: list[Block] = [Heading(f"{prop}: FAIL{label}", 3)]
    for r in failures:
        facts = r.facts
        size = (
            f", shrunk to {facts['clients']} clients and {facts['round_trips']} round trips"
            if "round_trips" in facts
            else ""
        )
        out.append(
            Para(f"`{r.check}` check: found after {facts.get('seconds_to_first', r.seconds):.2f} s{size}.")
        )
        if facts.get("trace"):
            out.append(Code("\n".join(facts["trace"])))
        else:
            out.append(Code(r.detail))
        if facts.get("replay"):
            out.append(Para(f"Replay: `{facts['replay']}`"))
    if finding is None:
        out.append(Para("Not examined yet: no finding is recorded for it in contend/scoreboard/expected.py."))
    else:
        out.append(Para(f"In the library: {finding.source}. {finding.explanation}"))
        out.append(Para(f"Standalone reproduction: `{finding.reproduction}`."))
    return out


def _judges(check: str) -> str:
    """The property a check is about (the schedule check judges every claimed one)."""
    if check == SCHEDULE.name:
        return "every claimed one"
    return next((c.prop for c in BATTERIES["lock"] if c.name == check), "")


def _one_line(r: CheckResult) -> str:
    if r.status == FAIL:
        return r.detail.split("\n")[0].split(" — ")[0]
    if r.status == INCONCLUSIVE:
        return r.detail
    return r.detail.split("\n")[0]


def markdown_summary(board: Scoreboard, verdict: str) -> str:
    """The headline table and what differs from the record, for a CI step summary."""
    parts: list[Block] = [
        Heading("contend scoreboard", 2),
        Para(f"**{verdict}** on {board.server}"),
        headline(board),
    ]
    if board.surprises:
        parts.append(Code("\n".join(board.surprises)))
    return markdown(parts, images=False)


def write(board: Scoreboard, out_dir: Path, command: str) -> list[Path]:
    """report.md and index.html in `out_dir` (created if need be)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    parts = blocks(board, command)
    md = out_dir / "report.md"
    md.write_text(markdown(parts))
    page = out_dir / "index.html"
    page.write_text(html_page("contend scoreboard", parts))
    return [md, page]
