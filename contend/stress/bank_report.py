"""A transaction stress run for CI and for a person: JUnit testcases, the Markdown summary's rows
and the lines of the report (the parts that differ from a linearizability run's)."""

from __future__ import annotations

from contend.ci.junit import Case, Outcome
from contend.stress.result import StressResult


def transaction_cases(result: StressResult) -> list[Case]:
    """One testcase per property (serializable, consistent-audit, applies-once): a failure for a
    violation, an error for one the record could not judge."""
    cls = f"contend.stress.transaction.{result.options.impl}"
    judged = result.judgement
    assert judged is not None
    cases = []
    for name in result.invariants:
        broken = [str(v) for v in result.violations if v.check == name]
        unjudged = [u for u in judged.unjudged if _about(u) == name]
        if broken:
            cases.append(Case(cls, name, result.seconds, Outcome.FAILURE, broken[0], "\n".join(broken)))
        elif unjudged:
            cases.append(Case(cls, name, 0.0, Outcome.ERROR, unjudged[0], "\n".join(unjudged)))
        else:
            cases.append(Case(cls, name, 0.0, Outcome.PASSED, text=judged.summary()))
    return cases


def _about(reason: str) -> str:
    return "applies-once" if "applies-once" in reason else "serializable"


def lines(result: StressResult) -> list[str]:
    """What a person reads about the graph and the properties (before the headline)."""
    judged = result.judgement
    assert judged is not None
    out = [f"serializability: {judged.summary()}"]
    out += [f"not judged: {u}" for u in judged.unjudged]
    for v in result.violations:
        if v.check == "serializable" and judged.cycle is not None:
            # The cycle is on the line above: the operations it joins.
            out.append(f"{v.check}: the operations: {v.message.partition('; the operations: ')[2]}")
        else:
            out.append(f"{v.check}: {v.message}")
    if not result.violations:
        out.append(f"properties hold: {', '.join(result.invariants)}")
    return out
