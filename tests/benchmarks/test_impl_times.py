import sys

import pytest

from contend.benchmarks import impl_times
from contend.benchmarks.impl_times import Case, Timing, line, run_one, verdict


def document(row_verdict: str, statuses: dict[str, str]) -> dict:
    checks = [{"check": name, "status": status} for name, status in statuses.items()]
    return {"implementations": [{"verdict": row_verdict, "checks": checks}]}


def test_a_row_that_passed_is_pass_and_any_other_names_the_checks_that_did_not():
    assert verdict(document("pass", {"model": "pass", "schedule": "pass"})) == "pass"
    found = verdict(document("FAIL", {"model": "pass", "schedule": "fail", "burst": "inconclusive"}))
    assert found == "FAIL: schedule fail, burst inconclusive"


def test_the_line_gives_each_commands_verdicts_median_worst_and_the_ratio_to_the_first():
    case = Case("tests.fixtures.foreign.flight", "single-flight")
    before = Timing(seconds=[10.0, 12.0, 40.0], verdicts=["pass"] * 3)
    after = Timing(seconds=[5.0, 6.0, 7.0], verdicts=["pass", "pass", "FAIL: schedule fail"])
    text = line(case, [before, after], limit=30.0)
    assert text.startswith("foreign.flight ")
    assert "pass 3/3  median  12.0 s  worst  40.0 s  over 30 s: 1" in text
    assert "FAIL: schedule fail/pass 2/3  median   6.0 s  worst   7.0 s  over 30 s: 0" in text
    assert text.endswith("x0.50")
    assert "refused" in line(case, [Timing(refused="unknown family"), after], limit=30.0)


def test_a_command_that_refuses_the_implementation_is_reported_with_its_message():
    seconds, said, message = run_one(
        [sys.executable, "-m", "contend.cli"], Case("no.such.module", "nonsense")
    )
    assert said == "refused"
    assert "nonsense" in message and seconds > 0


def test_an_unknown_implementation_is_refused_with_the_names_to_choose_from(capsys):
    with pytest.raises(SystemExit) as exit_:
        impl_times.main(["--only", "foreign.nope"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "unknown implementation(s) foreign.nope" in err and "foreign.raising_lock" in err


def test_a_contend_command_that_does_not_exist_is_refused_before_anything_runs(capsys):
    with pytest.raises(SystemExit) as exit_:
        impl_times.main(["--contend", "/no/such/contend", "--only", "foreign.flight"])
    assert exit_.value.code == 2
    assert "--contend '/no/such/contend': no such program" in capsys.readouterr().err


def test_a_mutant_is_caught_only_by_a_failure_for_a_property_its_defect_breaks():
    broken = frozenset({"progress"})
    failed = {"verdict": "FAIL", "checks": [{"check": "schedule", "status": "fail", "property": "progress"}]}
    assert verdict({"implementations": [failed]}, broken) == "caught"
    other = {
        "verdict": "FAIL",
        "checks": [{"check": "burst", "status": "fail", "property": "mutual-exclusion"}],
    }
    assert verdict({"implementations": [other]}, broken) == "FAIL: burst fail"
    assert verdict(document("pass", {"schedule": "pass"}), broken) == "pass"


def test_the_mutants_are_the_faults_benchmarks_with_their_claims():
    from contend.benchmarks.faults import MUTANTS

    cases = impl_times.mutant_cases()
    assert [c.module for c in cases] == [f"tests.fixtures.{m.module}" for m in MUTANTS]
    assert all(c.broken for c in cases)
    log = next(c for c in cases if c.name == "foreign.client_clock_log")
    assert "--claim" in log.arguments() and "sliding-log" in log.arguments()
    caught = Timing(seconds=[3.0], verdicts=["caught"])
    assert "caught 1/1" in line(log, [caught], limit=30.0)
