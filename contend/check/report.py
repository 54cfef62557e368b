"""What `contend check` prints and writes: the table, the evidence, the JSON.

A failed cell names the kind of property broken (safety, liveness, hygiene),
so a broken guarantee is not mistaken for an unclean refusal of bad input; an
inconclusive cell is a check that could not decide (its budget ran out, the
implementation blocked on something contend cannot see).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.markup import escape

from contend.check.battery import BATTERIES, ResultRow
from contend.check.framework import FAIL, INCONCLUSIVE, NOT_JUDGED, PASS
from contend.ci.junit import Case, Outcome
from contend.ci.summary import code_block, table
from contend.impl.catalog import CLUSTER_SLOTS, FENCING, PROPERTY_DESCRIPTIONS, PROPERTY_KINDS
from contend.subject.claims import DEFAULT_CLAIMS


def rows_json(rows: Sequence[ResultRow]) -> list[dict[str, Any]]:
    """Every implementation's verdict and every check's outcome, for --json."""
    return [
        {
            "implementation": row.subject.name,
            "family": row.subject.family.replace("_", "-"),
            "known_bad": row.subject.known_bad,
            "verdict": row.verdict,
            "as_expected": row.as_expected,
            "claims": sorted(row.subject.claims),
            "capabilities": row.subject.capabilities.describe() if row.subject.capabilities else None,
            "skipped": row.skipped or None,
            "checks": [
                {
                    "check": r.check,
                    "status": r.status,
                    "passed": r.passed,
                    "property": r.prop or None,
                    "kind": r.kind or None,
                    "detail": r.detail,
                    "seconds": round(r.seconds, 3),
                    "not_exercised": r.not_exercised,
                }
                for r in row.results
            ],
        }
        for row in rows
    ]


def junit_cases(rows: Sequence[ResultRow]) -> list[Case]:
    """One testcase per implementation × check. A correct implementation's failed check is a
    failure with its evidence; a known-bad one's checks pass, and its `caught` testcase fails
    when no check caught it. An inconclusive check is an error (no verdict)."""
    cases = []
    for row in rows:
        cls = f"contend.check.{row.subject.family.replace('_', '-')}.{row.subject.name}"
        if row.skipped:
            cases.append(Case(cls, "skipped", 0.0, Outcome.SKIPPED, row.skipped, row.skipped))
            continue
        for r in row.results:
            evidence = _evidence(row, r)
            if r.status == INCONCLUSIVE:
                cases.append(
                    Case(cls, r.check, r.seconds, Outcome.ERROR, f"inconclusive: {r.detail}", r.detail)
                )
            elif r.status == FAIL and not row.subject.known_bad:
                cases.append(Case(cls, r.check, r.seconds, Outcome.FAILURE, evidence, evidence))
            else:
                text = (
                    f"caught (expected of a known-bad implementation): {evidence}" if r.status == FAIL else ""
                )
                cases.append(Case(cls, r.check, r.seconds, Outcome.PASSED, text=text))
        if row.subject.known_bad:
            total = sum(r.seconds for r in row.results)
            if row.failed:
                cases.append(Case(cls, "caught", total, Outcome.PASSED))
            elif row.unjudged_by:
                why = f"not run: the checks that judge what it breaks ({', '.join(row.unjudged_by)}) were not chosen"
                cases.append(Case(cls, "caught", total, Outcome.SKIPPED, why, why))
            elif row.verdict != INCONCLUSIVE:
                why = f"{row.subject.name} is known-bad and no check caught it"
                cases.append(Case(cls, "caught", total, Outcome.FAILURE, why, why))
    return cases


def summary_markdown(rows: Sequence[ResultRow], headline: str, server: str) -> str:
    """The run as Markdown for a CI step summary: one table per family, then the evidence."""
    parts = [f"## contend check\n\n{headline}\n\non {server}"]
    for fam in dict.fromkeys(row.subject.family for row in rows):
        mine = [r for r in rows if r.subject.family == fam]
        order = [c.name for c in BATTERIES.get(fam, [])]
        seen = {r.check for row in mine for r in row.results}
        checks = [c for c in order if c in seen] + sorted(seen - set(order))
        body = []
        for row in mine:
            by_check = {r.check: r for r in row.results}
            name = row.subject.name + (" (known-bad)" if row.subject.known_bad else "")
            cells = [_md_cell(by_check[c]) if c in by_check else "" for c in checks]
            verdict = row.verdict if row.as_expected else f"**{row.verdict}**"
            body.append([name, *cells, verdict])
        parts.append(f"### {fam.replace('_', '-')}\n\n" + table(["implementation", *checks, "verdict"], body))
    lines = evidence_lines(rows)
    if lines:
        parts.append("### evidence\n\n" + code_block(lines))
    return "\n\n".join(parts)


def _md_cell(r: Any) -> str:
    """A check's status in the step summary's table, with what a pass did not exercise."""
    return f"{r.status} ({len(r.not_exercised)} not exercised)" if r.passed and r.not_exercised else r.status


def _evidence(row: ResultRow, r: Any) -> str:
    if r.status != FAIL:
        return r.detail
    kind = PROPERTY_KINDS.get(r.prop, "safety")
    said = PROPERTY_DESCRIPTIONS.get(r.prop, "")
    return f"{kind}: {r.prop}" + (f" ({said})" if said else "") + f": {r.detail}"


def results_table(rows: Sequence[ResultRow]) -> Any:
    """Rich tables, one per family: implementation × check, then the verdict.

    An empty cell is a check that does not apply (a property not claimed, a
    capability the implementation lacks).
    """
    from rich.console import Group

    families = list(dict.fromkeys(row.subject.family for row in rows))
    tables = [
        _family_table(
            [r for r in rows if r.subject.family == fam],
            "contend check" + (f" · {fam.replace('_', '-')}" if len(families) > 1 else ""),
        )
        for fam in families
    ]
    return tables[0] if len(tables) == 1 else Group(*tables)


def not_exercised_count(rows: Sequence[ResultRow]) -> int:
    """Passed checks with a claimed property whose situation never arose."""
    return sum(bool(r.not_exercised) for row in rows for r in row.results if r.passed)


def _cell(status: str, kind: str, known_bad: bool, unmet: int = 0) -> str:
    if status == PASS:
        return f"[green]pass[/]\n[yellow]{unmet} not exercised[/]" if unmet else "[green]pass[/]"
    if status == INCONCLUSIVE:
        return "[yellow]inconclusive[/]"
    return f"[yellow]caught: {kind}[/]" if known_bad else f"[red]{kind}[/]"


def _family_table(rows: Sequence[ResultRow], title: str) -> Any:
    from rich.table import Table

    seen = {r.check for row in rows for r in row.results}
    order = [c.name for c in BATTERIES.get(rows[0].subject.family, [])] if rows else []
    checks = [name for name in dict.fromkeys(order) if name in seen]
    for row in rows:
        checks += [r.check for r in row.results if r.check not in checks]
    blank = any(len(row.results) < len(checks) for row in rows)
    table = Table(
        title=title,
        title_justify="left",
        caption="blank: the check does not apply (a property not claimed, a capability it lacks)"
        if blank
        else None,
        caption_justify="left",
    )
    table.add_column("implementation", style="bold")
    table.add_column("family")
    for name in checks:
        table.add_column(name, justify="center")
    table.add_column("verdict", justify="center")
    for row in rows:
        by_check = {r.check: r for r in row.results}
        cells = []
        for name in checks:
            r = by_check.get(name)
            cells.append(
                "" if r is None else _cell(r.status, r.kind, row.subject.known_bad, len(r.not_exercised))
            )
        style = {
            "pass": "green",
            "caught": "yellow",
            "inconclusive": "yellow",
            "skipped": "dim",
            "not run": "dim",
        }.get(row.verdict, "bold red")
        label = escape(row.subject.name) + (" [dim](known-bad)[/]" if row.subject.known_bad else "")
        table.add_row(label, row.subject.family.replace("_", "-"), *cells, f"[{style}]{row.verdict}[/]")
    return table


def claims_lines(rows: Sequence[ResultRow]) -> list[str]:
    """For each user implementation: the claims checked and what was found beyond the protocol."""
    lines = []
    for row in rows:
        subject = row.subject
        if subject.selector[:1] != ("--impl",):
            continue
        defaults = DEFAULT_CLAIMS[subject.family]
        notes = []
        if (
            FENCING in subject.claims
            and FENCING not in defaults
            and subject.capabilities
            and subject.capabilities.fencing
        ):
            notes.append("fencing: it exposes a token")
        notes += list(subject.claim_changes)
        how = f" ({'; '.join(notes)})" if notes else " (the defaults)"
        found = subject.capabilities.describe() if subject.capabilities else "?"
        lines.append(f"{subject.name} claims {', '.join(sorted(subject.claims))}{how}; it offers {found}")
    return lines


def evidence_lines(rows: Sequence[ResultRow]) -> list[str]:
    """One entry per failed or inconclusive check: which property, in words, and the evidence;
    what a pass could not judge or never met; and why an implementation was skipped."""
    lines = [
        f"{row.subject.name}: skipped on this Redis Cluster: {row.skipped}" for row in rows if row.skipped
    ]
    for row in rows:
        lines += _slot_refusals(row)
        for r in row.results:
            if r.status == FAIL and r.prop != CLUSTER_SLOTS:
                lines.append(f"{row.subject.name} · {r.check} · {_evidence(row, r)}")
            elif r.status == INCONCLUSIVE:
                lines.append(f"{row.subject.name} · {r.check}: {r.detail}")
            elif r.status == PASS:
                if NOT_JUDGED in r.detail:
                    lines.append(
                        f"{row.subject.name} · {r.check}: {NOT_JUDGED}{r.detail.split(NOT_JUDGED, 1)[1]}"
                    )
                lines += [
                    f"{row.subject.name} · {r.check}: {prop} not exercised (its situation never arose: {situation})"
                    for prop, situation in r.not_exercised.items()
                ]
    return lines


def _slot_refusals(row: ResultRow) -> list[str]:
    """A row's cluster-slots findings first (what the other symptoms of the code would come
    from), one line per refusal however many checks met it: the command, and the script's line
    or the kind of refusal, say which; the state machine's evidence, with its trace, is shown
    when it met it."""
    groups: dict[tuple[Any, ...], list[Any]] = {}
    for r in row.results:
        if r.status == FAIL and r.prop == CLUSTER_SLOTS:
            said = r.facts.get("refusal") or {}
            line = said.get("script_line") or {}
            groups.setdefault((said.get("command"), said.get("shape"), line.get("text")), []).append(r)
    lines = []
    for met in groups.values():
        shown = next((r for r in met if r.facts.get("trace")), met[0])
        checks = ", ".join(r.check for r in met)
        lines.append(f"{row.subject.name} · {checks} · {_evidence(row, shown)}")
    return lines
