"""What `contend scoreboard` prints (a rich table) and writes (report.md and index.html).

The written report has the headline table (library, version, row, a verdict per property, the
time; a FAIL links to its finding), then a section per row: its configuration, what the library
claims in its own words and what it does not, the adapter's fidelity, every check it ran, and
for each violation the shrunk interleaving, the replay command, the defect in the library's own
source, the standalone reproduction and what the library's tracker knows of it.
"""

from __future__ import annotations

import platform
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contend import __version__
from contend.check.battery import BATTERIES
from contend.check.framework import FAIL, INCONCLUSIVE, CheckResult
from contend.check.schedule import SCHEDULE
from contend.impl.catalog import PROPERTY_DESCRIPTIONS, PROPERTY_KINDS
from contend.report.render import Block, Code, Heading, Para, Table, html_page, markdown
from contend.scoreboard import expected
from contend.scoreboard.expected import (
    LIBRARY,
    RECORDED_WITH,
    TRACKER_NOT_FOUND,
    Finding,
)
from contend.scoreboard.ids import CHECK_PROPS
from contend.scoreboard.libraries import LIBRARIES
from contend.scoreboard.library import ID_FAMILY
from contend.scoreboard.limitations import LIMITATIONS
from contend.scoreboard.run import FAIL_V, INCONCLUSIVE_V, NOT_CLAIMED, PASS_V, LibraryResult, Scoreboard


def columns(board: Scoreboard) -> list[str]:
    """The property columns: every property some row judges, in a fixed order."""
    seen = {p for r in board.results for p in r.properties}
    return [p for p in PROPERTY_DESCRIPTIONS if p in seen]


def cell(result: LibraryResult, prop: str, *, links: bool = False) -> str:
    """A property's verdict in words: pass, FAIL (bug, protocol or documented), inconclusive, or — (not claimed).
    With `links`, a FAIL that has a finding links to it (Markdown)."""
    if result.skipped:
        return "not run"
    verdict = result.verdict(prop)
    if verdict == NOT_CLAIMED:
        return "—"
    text = {PASS_V: "pass", INCONCLUSIVE_V: "inconclusive"}.get(verdict, "FAIL")
    finding = result.finding(prop)
    if verdict == FAIL_V and finding is not None:
        label = f"FAIL ({finding.kind})"
        text = f"[{label}](#{finding.anchor})" if links else label
    if result.unmet(prop):
        text += " (finding not met this run)"
    elif result.unsettled(prop):
        text += " (may be: see the row)"
    elif verdict != result.expected(prop):
        text += f" ≠ expected {result.expected(prop)}"
    return text


def version_of(result: LibraryResult) -> str:
    """The version that ran, else the one its environment pins."""
    return result.version or result.library.pinned() or "—"


def headline(board: Scoreboard, *, links: bool = False) -> Table:
    """Library, version, row, a verdict per property, the time of the row."""
    props = columns(board)
    rows = []
    for r in board.results:
        time = "—" if r.skipped else f"{r.seconds:.0f} s"
        rows.append(
            (
                r.library.distribution,
                version_of(r),
                r.library.title,
                *(cell(r, p, links=links) for p in props),
                time,
            )
        )
    header = ("library", "version", "row", *props, "time")
    return Table(header, tuple(rows), "lll" + "l" * len(props) + "r")


def rich_table(board: Scoreboard) -> Any:
    """The headline table for the terminal."""
    from rich.table import Table as RichTable

    table = headline(board)
    out = RichTable(title="contend scoreboard", title_justify="left")
    for i, (name, align) in enumerate(zip(table.header, table.align, strict=True)):
        out.add_column(name, justify="right" if align == "r" else "left", no_wrap=i <= 1)
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
    if text in ("inconclusive", "not run"):
        return f"[yellow]{text}[/]"
    return text


def blocks(board: Scoreboard, command: str) -> list[Block]:
    """The whole written report."""
    mode = "quick (fewer examples)" if board.quick else "full"
    out: list[Block] = [
        Heading("contend scoreboard: Python Redis locks, queues and rate limiters", 1),
        Para(
            f"Made with contend {__version__} on {board.server}, Python {platform.python_version()}, "
            f"{mode} run, {board.seconds:.0f} s in all: `{command}`. Each library runs unmodified "
            "behind an adapter (`contend/adapters/`) that uses its API as documented, and is judged "
            "only on what its documentation claims. A FAIL is a counterexample contend found and "
            "shrank; each one is reproduced by a standalone script (plain redis-py and threads) "
            "named below."
        ),
        Para(counts_line(board)),
        headline(board, links=True),
        Para(
            "Properties: "
            + "; ".join(
                f"**{p}** ({PROPERTY_KINDS.get(p, 'safety')}): {PROPERTY_DESCRIPTIONS[p]}"
                for p in columns(board)
            )
            + ". — : not claimed by the library in this configuration; not run: the row says why."
        ),
        *findings_summary(board),
    ]
    if board.surprises:
        out.append(
            Para("**Not as recorded in contend/scoreboard/expected.py:** " + "; ".join(board.surprises))
        )
    for result in board.results:
        out += library_blocks(result)
    return out


def counts_line(board: Scoreboard) -> str:
    """The board's counts in words, from the data (findings_count)."""
    c = findings_count(board)
    return (
        f"{c['rows']} rows, {c['distributions']} distributions; {c['findings']} findings recorded in "
        f"`contend/scoreboard/expected.py`: {c['library_promise']} break the library's own documented "
        f"promise ({c['library_promise_not_in_tracker']} of them not found in its tracker), "
        f"{c['contend_protocol_only']} only contend's stricter protocol; this run met {c['met']}."
    )


def met_words(result: LibraryResult, prop: str) -> str:
    """Whether the run met the finding on `prop`: by its own checks, by an attempt after them
    (contend.scoreboard.confirm, named), or not (and why some runs do not)."""
    finding = result.finding(prop)
    if finding is not None and result.unmet(prop):
        return f"not met this run ({finding.sometimes})"
    again = result.confirmed_by(prop)
    return f"met by {again.check} ({finding.sometimes})" if again and finding else "met"


def findings_summary(board: Scoreboard) -> list[Block]:
    """One line per finding: row, property, whether the tracker knows it."""
    found = [
        (r, p, r.finding(p))
        for r in board.results
        for p in r.properties
        if r.verdict(p) == FAIL_V or r.unmet(p)
    ]
    if not found:
        return []
    rows = tuple(
        (
            f"[{r.library.title}](#{f.anchor})" if f and not r.unmet(prop) else r.library.title,
            prop,
            f.kind if f else "not examined",
            whose(f) if f else "",
            met_words(r, prop),
            f.tracker if f else "",
        )
        for r, prop, f in found
    )
    return [
        Heading("Findings", 2),
        Table(
            ("row", "property", "kind", "whose promise", "this run", "the library's tracker"), rows, "llllll"
        ),
    ]


def library_blocks(result: LibraryResult) -> list[Block]:
    lib = result.library
    out: list[Block] = [Heading(f"{lib.title} {version_of(result)}".rstrip(), 2)]
    if lib.quotes:
        out.append(Para("What it claims: " + "; ".join(f"“{q.text}” ({q.source})" for q in lib.quotes) + "."))
    limits = LIMITATIONS.get(lib.key, ())
    if limits:
        out.append(
            Para(
                "What it does not claim: "
                + "; ".join(
                    f"{text} ({'documented' if documented else 'seen in the source'})"
                    for text, documented in limits
                )
                + "."
            )
        )
    if result.skipped:
        return [*out, Para(f"Not run: {result.skipped}.")]
    recorded = lib.pinned() or RECORDED_WITH.get(lib.distribution)
    note = f" (expectations recorded with {recorded})" if recorded and recorded != result.version else ""
    out.append(
        Para(
            f"Configuration: {lib.configuration}. Family: {lib.family}. Judged on: "
            f"{', '.join(sorted(lib.claims))}. Adapter: `{lib.adapter}`. {result.seconds:.1f} s{note}."
        )
    )
    if lib.may_be_inconclusive:
        out.append(Para(f"May be inconclusive: {lib.may_be_inconclusive}."))
    if result.fidelity:
        seen = result.fidelity_error or result.fidelity_seen
        out.append(Para(f"Adapter fidelity: {result.fidelity} (checked: {seen})."))
    if result.row is not None:
        out.append(
            Table(
                ("check", "property", "status", "seconds", "what it found"),
                tuple(
                    (
                        r.check,
                        r.prop or _judges(r.check, lib.family),
                        r.status,
                        f"{r.seconds:.1f}",
                        _one_line(r),
                    )
                    for r in result.row.results
                ),
                "lllrl",
            )
        )
    for prop in result.properties:
        failures = result.failures(prop)
        if failures:
            out += violation_blocks(result, prop, failures)
    return out


def violation_blocks(result: LibraryResult, prop: str, failures: Sequence[CheckResult]) -> list[Block]:
    finding = result.finding(prop)
    label = "" if finding is None else f" ({finding.kind})"
    title = f"Finding: {result.library.key}, {prop}" if finding else f"{prop}: FAIL"
    out: list[Block] = [Heading(title, 3), Para(f"**{prop}: FAIL{label}**")]
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
        out += finding_blocks(finding)
    return out


def whose(finding: Finding) -> str:
    """Whose promise the finding breaks, in a few words."""
    if finding.promise is None:
        return "not said"
    return "the library's own" if finding.promise.whose == LIBRARY else "contend's protocol only"


def promise_line(finding: Finding) -> str:
    """Whose promise, in whose words, and where they are written."""
    if finding.promise is None:
        return "Whose promise it breaks: not recorded."
    if finding.promise.whose == LIBRARY:
        return f"It breaks the library's own promise: “{finding.promise.text}” ({finding.promise.link})."
    return f"It breaks contend's protocol, not the library's documented promise: {finding.promise.text} ({finding.promise.link})."


def finding_blocks(finding: Finding) -> list[Block]:
    """Where the defect is, whose promise it breaks, how to see it without contend, what the tracker knows."""
    return [
        Para(f"In the library: {finding.source}. {finding.explanation}"),
        Para(promise_line(finding)),
        Para(
            f"Standalone reproduction (plain redis-py and the library, any Redis): "
            f"`python {finding.reproduction} redis://HOST:PORT/DB`."
        ),
        Para(f"The library's tracker: {finding.tracker}."),
    ]


def finding_json(result: LibraryResult, prop: str) -> dict[str, Any]:
    """A row's finding for `--json` (the schema: docs/commands/scoreboard.md)."""
    finding = result.finding(prop)
    assert finding is not None
    verdict = result.verdict(prop)
    return {
        "property": prop,
        "met": verdict == FAIL_V,
        "verdict": verdict,
        "kind": finding.kind,
        "source": finding.source,
        "promise": {
            "whose": finding.promise.whose if finding.promise else None,
            "text": finding.promise.text if finding.promise else None,
            "link": finding.promise.link if finding.promise else None,
        },
        "tracker": {"status": finding.tracker_status, "refs": list(finding.refs), "note": finding.tracker},
        "reproduction": finding.reproduction,
        "sometimes": finding.sometimes or None,
        "met_by": list(finding.met_by),
        "confirmed_by": again.check if (again := result.confirmed_by(prop)) else None,
        "anchor": finding.anchor,
    }


def findings_count(board: Scoreboard | None = None) -> dict[str, int]:
    """The counts README, docs and report quote, from the data: rows, distributions and recorded
    findings (of the rows on `board`, or of every row), how many break the library's own promise,
    how many only contend's protocol, how many of the first the library's tracker does not know,
    and how many `board` met."""
    keys = {r.library.key for r in board.results} if board is not None else {lib.key for lib in LIBRARIES}
    rows = [lib for lib in LIBRARIES if lib.key in keys]
    findings = [f for f in expected.FINDINGS if f.library in keys]
    own = [f for f in findings if f.promise is not None and f.promise.whose == LIBRARY]
    counts = {
        "rows": len(rows),
        "distributions": len({lib.distribution for lib in rows}),
        "findings": len(findings),
        "library_promise": len(own),
        "contend_protocol_only": len(findings) - len(own),
        "library_promise_not_in_tracker": sum(f.tracker_status == TRACKER_NOT_FOUND for f in own),
    }
    if board is not None:
        judged = [
            (r, f)
            for r in board.results
            if r.row is not None and not r.fidelity_error
            for f in findings
            if f.library == r.library.key
        ]
        counts["met"] = sum(r.verdict(f.prop) == FAIL_V for r, f in judged)
        counts["undecided"] = sum(r.verdict(f.prop) == INCONCLUSIVE_V for r, f in judged)
        counts["not_met"] = len(judged) - counts["met"] - counts["undecided"]
        counts["not_judged"] = len(findings) - len(judged)  # their rows did not run (or not faithfully)
    return counts


def findings_tally(board: Scoreboard) -> str:
    """The board's recorded findings met and not met, in words (issue 41): "8 of 13 recorded
    findings met; 5 not met" (and how many were in rows that did not run)."""
    c = findings_count(board)
    text = f"{c['met']} of {c['findings']} recorded finding(s) met; {c['not_met']} not met"
    text += f"; {c['undecided']} inconclusive" if c["undecided"] else ""
    return text + (f"; {c['not_judged']} in rows not run" if c["not_judged"] else "")


def _judges(check: str, family: str) -> str:
    """The property a check is about (the schedule check judges every claimed one)."""
    if check == SCHEDULE.name:
        return "every claimed one"
    if family == ID_FAMILY:
        return CHECK_PROPS.get(check, "")
    return next((c.prop for c in BATTERIES.get(family, BATTERIES["lock"]) if c.name == check), "")


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
    page.write_text(linked(html_page("contend scoreboard", parts)))
    return [md, page]


def slug(text: str) -> str:
    """A heading's id as GitHub and MkDocs make it, for the plain headings the report links to."""
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def linked(page: str) -> str:
    """The HTML page with its Markdown links made links and its finding headings given ids."""
    page = re.sub(r"\[([^\]]+)\]\((#[\w-]+)\)", r'<a href="\2">\1</a>', page)
    return re.sub(
        r"<h3>(Finding: [^<]+)</h3>", lambda m: f'<h3 id="{slug(m.group(1))}">{m.group(1)}</h3>', page
    )
