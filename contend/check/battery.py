"""The battery runner behind `contend check`: implementation × check, one verdict each."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from contend.check.framework import Check, CheckContext, CheckOptions, CheckResult, run_check
from contend.check.locks import LOCK_CHECKS
from contend.check.protocols import ProtocolError, check_factory_signature, check_object, load_factory
from contend.check.registry import CHECKS as REGISTRY_CHECKS
from contend.check.schedule import schedule_check
from contend.check.semaphore import SEMAPHORE_CHECKS
from contend.check.single_flight import SINGLE_FLIGHT_CHECKS
from contend.impl import catalog
from contend.target.keyspace import Namespace
from contend.target.target import Target

SCHEDULE = Check("schedule", "Hypothesis chooses the interleaving of round trips", schedule_check)
BATTERIES: dict[str, list[Check]] = {
    "registry": [*REGISTRY_CHECKS, SCHEDULE],
    "lock": [*LOCK_CHECKS, SCHEDULE],
    "semaphore": [*SEMAPHORE_CHECKS, SCHEDULE],
    "single_flight": [*SINGLE_FLIGHT_CHECKS, SCHEDULE],
}

#: What a user's implementation (--impl) is taken to claim, per family.
DEFAULT_CLAIMS: dict[str, frozenset[str]] = {
    "registry": catalog.REGISTRY_PROPERTIES,
    "lock": frozenset(
        {catalog.MUTUAL_EXCLUSION, catalog.CLOCK_SKEW_SAFE, catalog.SAFE_RELEASE, catalog.CRASH_LIVENESS}
    ),
    "semaphore": frozenset(
        {catalog.MUTUAL_EXCLUSION, catalog.CLOCK_SKEW_SAFE, catalog.SAFE_RELEASE, catalog.CRASH_LIVENESS}
    ),
    "single_flight": catalog.SINGLE_FLIGHT_PROPERTIES,
}


@dataclass(frozen=True)
class Subject:
    """One row of the table: an implementation and what is expected of it."""

    name: str
    family: str
    factory: Callable[..., Any]
    known_bad: bool = False
    violates: frozenset[str] = frozenset()
    summary: str = ""
    dbs: tuple[int, ...] = ()
    claims: frozenset[str] = frozenset()

    def checks(self) -> list[Check]:
        """The family's checks that apply to this subject (some need a claim or a capability)."""
        chosen = []
        for check in BATTERIES[self.family]:
            applies = getattr(check, "applies", None)
            if applies is None or applies(self.claims | self.violates, self.factory):
                chosen.append(check)
        return chosen


@dataclass
class ResultRow:
    subject: Subject
    results: list[CheckResult] = field(default_factory=list)

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if not r.passed]

    @property
    def verdict(self) -> str:
        if self.subject.known_bad:
            return "caught" if self.failed else "NOT CAUGHT"
        return "FAIL" if self.failed else "pass"

    @property
    def as_expected(self) -> bool:
        return self.verdict in ("pass", "caught")


def catalog_subjects(families: Sequence[str], names: Sequence[str] = ()) -> list[Subject]:
    """Rows for the catalog's implementations of `families` (only `names` if given)."""
    chosen = [catalog.by_name(n) for n in names] if names else list(catalog.IMPLEMENTATIONS)
    return [
        Subject(
            impl.name,
            impl.family,
            impl.factory,
            impl.known_bad,
            impl.violates,
            impl.summary,
            catalog.SEED_LAYOUT_DBS if impl.name.startswith("seed_layout") else (),
            impl.claims,
        )
        for impl in chosen
        if impl.family in families
    ]


def user_factory(spec: str, kind: str) -> Callable[..., Any]:
    """Import `package.module:factory` and check its signature, before any server is touched."""
    if kind not in BATTERIES:
        raise ProtocolError(f"--kind {kind!r} has no battery yet; choose one of {', '.join(BATTERIES)}")
    factory = load_factory(spec)
    check_factory_signature(factory, kind, spec)
    return factory


def user_subject(spec: str, kind: str, target: Target) -> Subject:
    """A row for `package.module:factory`, after checking it follows the protocol."""
    factory = user_factory(spec, kind)
    client = target.client()
    ns = target.namespace(client=client)
    try:
        if kind == "registry":
            check_object(factory(client, ns.prefix), kind, spec)
        else:
            check_object(factory(client, ns.key("probe"), 1_000), kind, spec)
    finally:
        ns.cleanup()
        client.close()
    return Subject(spec, kind, factory, summary="user implementation", claims=DEFAULT_CLAIMS[kind])


def run_battery(
    target: Target,
    subjects: Sequence[Subject],
    options: CheckOptions,
    run_namespace: Namespace,
    on_result: Callable[[Subject, CheckResult], None] = lambda s, r: None,
) -> list[ResultRow]:
    """Run each subject's family battery, one fresh namespace per check, cleaned after it."""
    rows = []
    for subject in subjects:
        row = ResultRow(subject)
        for check in subject.checks():
            ns = Namespace(run_namespace.client, run_namespace.key(subject.name, check.name), dbs=subject.dbs)
            ctx = CheckContext(target, ns, subject.factory, options, subject.dbs, subject)
            try:
                result = run_check(check, ctx)
            finally:
                ns.cleanup()
            row.results.append(result)
            on_result(subject, result)
        rows.append(row)
    return rows


def write_json(rows: Sequence[ResultRow], path: Path, server: str) -> None:
    data = {
        "server": server,
        "rows": [
            {
                "implementation": row.subject.name,
                "family": row.subject.family,
                "known_bad": row.subject.known_bad,
                "verdict": row.verdict,
                "checks": [
                    {"check": r.check, "passed": r.passed, "detail": r.detail, "seconds": round(r.seconds, 3)}
                    for r in row.results
                ],
            }
            for row in rows
        ],
    }
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


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
            "contend check" + (f" · {fam}" if len(families) > 1 else ""),
        )
        for fam in families
    ]
    return tables[0] if len(tables) == 1 else Group(*tables)


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
        caption="blank: the check does not apply (a property not claimed, no client clock to skew)"
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
            if r is None:
                cells.append("")
            elif r.passed:
                cells.append("[green]pass[/]")
            else:
                cells.append("[yellow]caught[/]" if row.subject.known_bad else "[red]FAIL[/]")
        style = {"pass": "green", "caught": "yellow"}.get(row.verdict, "bold red")
        label = row.subject.name + (" [dim](known-bad)[/]" if row.subject.known_bad else "")
        table.add_row(label, row.subject.family, *cells, f"[{style}]{row.verdict}[/]")
    return table


def evidence_lines(rows: Sequence[ResultRow]) -> list[str]:
    """One line per failed check: what broke, for the table's reader."""
    lines = []
    for row in rows:
        for r in row.failed:
            lines.append(f"{row.subject.name} · {r.check}: {r.detail}")
    return lines
