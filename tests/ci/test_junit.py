"""contend.ci.junit: what CI test tabs read, checked with a JUnit XML parser."""

from __future__ import annotations

from junitparser import Error, Failure, JUnitXml, Skipped

from contend.ci.junit import Case, Outcome, to_xml, write_junit


def test_every_outcome_reads_back_with_its_evidence(tmp_path):
    cases = [
        Case("contend.check.lock.token", "burst", 0.5, Outcome.PASSED),
        Case(
            "contend.check.lock.token",
            "schedule",
            1.25,
            Outcome.FAILURE,
            "safety: two holders",
            "#0 c0 SET …",
        ),
        Case("contend.check.lock.token", "expiry", 30.0, Outcome.ERROR, "inconclusive: budget spent"),
        Case("contend.check.lock.token", "fencing", 0.0, Outcome.SKIPPED, "not claimed"),
    ]
    path = tmp_path / "out" / "junit.xml"
    write_junit(path, "contend check", cases)
    suites = JUnitXml.fromfile(str(path))
    (suite,) = list(suites)
    assert (suite.tests, suite.failures, suite.errors, suite.skipped) == (4, 1, 1, 1)
    by_name = {case.name: case for case in suite}
    assert by_name["burst"].is_passed and by_name["burst"].time == 0.5
    (failure,) = by_name["schedule"].result
    assert isinstance(failure, Failure) and failure.message == "safety: two holders"
    assert failure.text == "#0 c0 SET …"
    assert isinstance(by_name["expiry"].result[0], Error)
    assert isinstance(by_name["fencing"].result[0], Skipped)
    assert by_name["schedule"].classname == "contend.check.lock.token"


def test_control_characters_cannot_break_the_document():
    xml = to_xml("s", [Case("c", "n", 0.0, Outcome.FAILURE, "bad \x00\x1b[31m byte", "x\x07y")])
    suites = JUnitXml.fromstring(xml.decode())
    (case,) = next(iter(suites))
    assert case.result[0].message == "bad [31m byte" and case.result[0].text == "xy"


def test_nothing_is_written_without_a_path(tmp_path):
    write_junit(None, "s", [])
    assert not list(tmp_path.iterdir())
