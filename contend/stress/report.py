"""A stress run for CI: JUnit testcases and a Markdown step summary."""

from __future__ import annotations

from contend.ci.junit import Case, Outcome
from contend.ci.summary import code_block, table
from contend.history.verdict import Linearizability
from contend.stress.result import StressResult


def junit_cases(result: StressResult) -> list[Case]:
    """One testcase for linearizability and one per invariant, under the implementation's name, and
    with --nemesis one named nemesis: an error when a requested nemesis injected no fault."""
    if result.verdict is None:  # a transaction run: judged from the server's record
        from contend.stress.bank_report import transaction_cases

        return transaction_cases(result)
    cls = f"contend.stress.{result.workload.family}.{result.options.impl}"
    verdict = result.verdict
    seconds = result.seconds
    if verdict.outcome is Linearizability.NOT_LINEARIZABLE:
        text = "\n".join([verdict.summary(), *(p.explain() for p in verdict.partitions[:5])])
        cases = [Case(cls, "linearizability", seconds, Outcome.FAILURE, verdict.summary(), text)]
    elif verdict.outcome is Linearizability.UNKNOWN:
        cases = [Case(cls, "linearizability", seconds, Outcome.ERROR, verdict.summary(), verdict.summary())]
    else:
        cases = [Case(cls, "linearizability", seconds, Outcome.PASSED, text=verdict.summary())]
    for name in result.invariants:
        broken = [str(v) for v in result.violations if v.check == name]
        if broken:
            what = f"{len(broken)} violation(s): {broken[0]}"
            cases.append(Case(cls, name, 0.0, Outcome.FAILURE, what, "\n".join(broken[:50])))
        else:
            cases.append(Case(cls, name, 0.0, Outcome.PASSED))
    if result.options.nemeses:
        if result.no_fault:
            text = "\n".join(result.no_fault)
            cases.append(Case(cls, "nemesis", 0.0, Outcome.ERROR, result.no_fault[0], text))
        else:
            starts = sum(1 for r in result.nemesis if str(r.value).startswith("start"))
            cases.append(Case(cls, "nemesis", 0.0, Outcome.PASSED, text=f"{starts} fault(s) injected"))
    return cases


def summary_markdown(result: StressResult) -> str:
    """The run as Markdown: the headline, the counts, the evidence, the re-check command."""
    c = result.counts
    o = result.options
    rows = [
        ["implementation", o.impl],
        ["processes × duration", f"{o.procs} × {o.duration:g} s"],
        ["nemesis", ", ".join(o.nemeses) or "none"],
        [
            "operations",
            f"{sum(c.values())}: {c.get('ok', 0)} ok, {c.get('fail', 0)} fail, {c.get('info', 0)} info",
        ],
        ["nemesis events", str(len(result.nemesis))],
        *([["fencing", result.workload.fencing_note()]] if result.workload.family == "lock" else []),
        ["linearizability", result.verdict.summary()]
        if result.verdict
        else ["serializability", result.judgement.summary() if result.judgement else ""],
        ["invariants", ", ".join(result.invariants) or "none"],
    ]
    parts = [f"## contend stress\n\n**{result.headline()}**", table(["", ""], rows)]
    partitions = result.verdict.partitions[:5] if result.verdict else []
    evidence = [p.explain() for p in partitions if p.outcome is not Linearizability.LINEARIZABLE]
    evidence += [str(v) for v in result.violations[:20]]
    evidence = [*result.no_fault, *evidence]
    if evidence:
        parts.append("### evidence\n\n" + code_block(evidence))
    if result.explanation:
        parts.append("### why\n\n" + "\n\n".join(result.explanation))
    parts.append(f"re-check the kept history: `{result.recheck_command()}`")
    return "\n\n".join(parts)
