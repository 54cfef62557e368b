"""What every command writes for CI besides its text: --json (one envelope and one schema per
command), --junit-xml, the GitHub step summary, plain progress lines off a terminal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import fastjsonschema
import pytest
from junitparser import Failure, JUnitXml

from contend.ci.document import schema
from contend.ci.summary import ENV_VAR
from contend.cli import main

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def valid(command: str, doc: dict) -> dict:
    """The document, after checking it against the schema contend ships for the command."""
    fastjsonschema.compile(schema(command))(doc)
    assert doc["command"] == command and doc["schema"] == f"{command}-result.schema.json"
    return doc


def test_check_writes_json_junit_and_a_step_summary(tmp_path, monkeypatch, capsys):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv(ENV_VAR, str(summary))
    code = main(
        [
            "check",
            *("--only", "naive", "--only", "lua", "--check", "burst-one-name", "--check", "bad-input"),
            *("--json", str(tmp_path / "check.json"), "--junit-xml", str(tmp_path / "check.xml")),
        ]
    )
    assert code == 0, capsys.readouterr()
    doc = valid("check", json.loads((tmp_path / "check.json").read_text()))
    assert doc["verdict"] == "as-expected" and doc["exit_code"] == 0 and doc["exit"] == "ok"
    assert [(r["implementation"], r["verdict"]) for r in doc["implementations"]] == [
        ("naive", "caught"),
        ("lua", "pass"),
    ]
    (suite,) = list(JUnitXml.fromfile(str(tmp_path / "check.xml")))
    names = {(c.classname, c.name): c for c in suite}
    assert set(names) == {
        ("contend.check.registry.naive", "burst-one-name"),
        ("contend.check.registry.naive", "bad-input"),
        ("contend.check.registry.naive", "caught"),
        ("contend.check.registry.lua", "burst-one-name"),
        ("contend.check.registry.lua", "bad-input"),
    }
    assert suite.failures == 0 and suite.errors == 0, "a known-bad implementation caught is as expected"
    assert (
        "caught (expected of a known-bad implementation)"
        in names[("contend.check.registry.naive", "burst-one-name")].system_out
    )
    text = summary.read_text()
    assert text.startswith("## contend check") and "| naive (known-bad) | fail | pass | caught |" in text
    assert "```" in text and "Failed to register" in text and "![" not in text


def test_a_failure_is_a_junit_failure_with_its_evidence(tmp_path, capsys):
    code = main(
        [
            "check",
            *("--impl", "tests.fixtures.user_registry:make_racy", "--kind", "registry"),
            *("--check", "burst-one-name", "--junit-xml", str(tmp_path / "j.xml"), "--json", "-"),
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    doc = valid("check", json.loads(out[out.index("{") :]))
    assert doc["verdict"] == "not-as-expected" and doc["exit_code"] == 1
    (suite,) = list(JUnitXml.fromfile(str(tmp_path / "j.xml")))
    (case,) = list(suite)
    (failure,) = case.result
    assert isinstance(failure, Failure) and failure.message.startswith("liveness: no-spurious-errors")
    assert "clients registering" in failure.text


def test_history_check_json_and_junit(tmp_path, capsys):
    files = [DATA / "etcd_002.log", DATA / "etcd_000.log", DATA / "malformed.log"]
    out_json, out_xml = tmp_path / "h.json", tmp_path / "h.xml"
    code = main(
        [
            "history",
            "check",
            *map(str, files),
            "--model",
            "cas-register",
            "--json",
            str(out_json),
            "--junit-xml",
            str(out_xml),
        ]
    )
    assert code == 1
    doc = valid("history", json.loads(out_json.read_text()))
    assert doc["verdict"] == "not-linearizable" and [f["verdict"] for f in doc["files"]] == [
        "linearizable",
        "not-linearizable",
        "bad-input",
    ]
    (suite,) = list(JUnitXml.fromfile(str(out_xml)))
    assert (suite.tests, suite.failures, suite.errors) == (3, 1, 1)
    assert (
        "cannot linearize p11 read()"
        in next(c for c in suite if c.name.endswith("etcd_000.log")).result[0].text
    )


def test_history_json_never_overwrites_a_history(tmp_path, capsys):
    history = tmp_path / "h.json"
    history.write_text((DATA / "registry.jsonl").read_text())
    before = history.read_text()
    code = main(["history", "check", str(history), "--model", "registry", "--json", str(history)])
    assert code == 2 and "--json" in capsys.readouterr().err
    assert history.read_text() == before
    for option in ("--junit-xml", "--html"):
        code = main(["history", "check", str(history), "--model", "registry", option, str(history)])
        assert code == 2 and f"{option} {history} is one of the inputs to check" in capsys.readouterr().err
        assert history.read_text() == before
    both = tmp_path / "out.xml"
    code = main(
        [
            "history",
            "check",
            str(history),
            "--model",
            "registry",
            "--json",
            str(both),
            "--junit-xml",
            str(both),
        ]
    )
    assert code == 2 and "--json and --junit-xml both write" in capsys.readouterr().err


def test_the_old_bare_json_still_prints_to_stdout_with_a_warning(capsys):
    code = main(["history", "check", "--json", str(DATA / "etcd_002.log"), "--model", "cas-register"])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["verdict"] == "linearizable"
    assert "--json without a FILE is deprecated, use --json -" in err


@pytest.mark.slow
def test_bench_json(tmp_path, capsys):
    path = tmp_path / "bench.json"
    assert main(["bench", "lock", "--duration", "0.1", "--clients", "2", "--json", str(path)]) == 0
    doc = valid("bench", json.loads(path.read_text()))
    assert doc["verdict"] == "measured" and doc["family"] == "lock" and doc["rows"]


@pytest.mark.slow
def test_scoreboard_json(tmp_path, capsys):
    path = tmp_path / "board.json"
    code = main(["scoreboard", "--lib", "redis-py", "--quick", "--no-write", "--json", str(path)])
    assert code == 0, capsys.readouterr().out
    doc = valid("scoreboard", json.loads(path.read_text()))
    (row,) = doc["libraries"]
    assert doc["verdict"] == "as-recorded" and row["library"] == "redis-py"
    assert row["properties"]["mutual-exclusion"] == {"verdict": "pass", "expected": "pass"}


def test_an_output_path_that_cannot_be_written_is_refused_before_the_run(tmp_path, capsys):
    code = main(["check", "--only", "lua", "--check", "bad-input", "--json", str(tmp_path)])
    captured = capsys.readouterr()
    assert code == 2 and "is a directory" in captured.err and "embedded Redis" not in captured.out
    blocker = tmp_path / "file"
    blocker.write_text("")
    code = main(["check", "--only", "lua", "--junit-xml", str(blocker / "j.xml")])
    assert code == 2 and "is not a directory" in capsys.readouterr().err


@pytest.mark.slow
def test_piped_progress_is_plain_lines_and_quiet_silences_it(tmp_path):
    command = [sys.executable, "-m", "contend.cli", "check", "--only", "naive", "--only", "watch"]
    command += ["--check", "burst-one-name", "--check", "bad-input"]
    done = subprocess.run(command, capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 4 and all(line.startswith("contend check · ") for line in lines), lines
    assert lines[0].startswith("contend check · 1/4 · ") and "naive · burst-one-name: caught" in lines[0]
    assert lines[3].startswith("contend check · 4/4 · ") and "watch · bad-input: pass" in lines[3]
    assert "\x1b[" not in done.stderr, "no terminal control codes in a log"
    quiet = subprocess.run([*command, "--quiet"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert quiet.returncode == 0 and quiet.stderr == ""


def test_stress_json_junit_and_summary(tmp_path, monkeypatch, capsys):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv(ENV_VAR, str(summary))
    code = main(
        [
            "stress",
            "--only",
            "naive",
            "--processes",
            "3",
            "--duration",
            "0.8",
            "--out",
            str(tmp_path / "runs"),
            "--json",
            "-",
            "--junit-xml",
            str(tmp_path / "s.xml"),
            "--no-html",
        ]
    )
    captured = capsys.readouterr()
    assert code == 1
    doc = valid("stress", json.loads(captured.out))
    assert doc["verdict"] == "violation" and doc["impl"] == "naive" and doc["processes"] == 3
    assert "VIOLATION" in captured.err, "with --json - the text report goes to stderr"
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert valid("stress", json.loads((run_dir / "verdict.json").read_text()))["verdict"] == "violation"
    (suite,) = list(JUnitXml.fromfile(str(tmp_path / "s.xml")))
    cases = {c.name: c for c in suite}
    assert "linearizability" in cases and suite.failures >= 1
    text = summary.read_text()
    assert (
        text.startswith("## contend stress") and "re-check the kept history: `contend history check" in text
    )


@pytest.mark.slow
def test_the_junit_file_of_a_whole_catalog_check_reads_back(tmp_path, capsys):
    """Every family and implementation (sync and async), three quick checks each (one of them
    catches a known-bad one, one runs on known-bad ones it does not catch, and most known-bad
    ones are left unjudged): one testcase per implementation × check that ran, plus `caught` per
    known-bad one, and the JUnit counts agree with the JSON document (a known-bad one a check
    that judges it did not catch is a failure in both)."""
    small = ["--check", "bad-input", "--check", "cancel", "--check", "serial", "--serial-names", "50"]
    junit, report = tmp_path / "check.xml", tmp_path / "check.json"
    code = main(["check", *small, "--junit-xml", str(junit), "--json", str(report), "--quiet"])
    capsys.readouterr()
    doc = valid("check", json.loads(report.read_text()))
    assert doc["exit_code"] == code
    (suite,) = list(JUnitXml.fromfile(str(junit)))
    rows = doc["implementations"]
    assert {r["family"] for r in rows} == {
        "lock",
        "registry",
        "semaphore",
        "single-flight",
        "transaction",
        "queue",
        "rate-limiter",
    }
    expected = sum(len(r["checks"]) for r in rows) + sum(r["known_bad"] for r in rows)
    assert suite.tests == expected and len(list(suite)) == expected
    classes = {case.classname for case in suite}
    assert classes == {
        f"contend.check.{r['family']}.{r['implementation']}" for r in rows if r["checks"] or r["known_bad"]
    }
    correct_failures = sum(c["status"] == "fail" for r in rows if not r["known_bad"] for c in r["checks"])
    uncaught = sum(r["known_bad"] and r["verdict"] == "NOT CAUGHT" for r in rows)
    assert suite.failures == correct_failures + uncaught
    assert suite.errors == sum(c["status"] == "inconclusive" for r in rows for c in r["checks"])


def test_bad_input_replaces_an_older_json_and_junit_with_its_own(tmp_path, capsys):
    """A CI job reading --json or --junit-xml after a refused run must not find the last run's verdict."""
    report, junit = tmp_path / "check.json", tmp_path / "check.xml"
    report.write_text('{"verdict": "as-expected", "exit_code": 0}')
    junit.write_text("<testsuites/>")
    code = main(
        [
            "check",
            "--impl",
            "nosuch.module:make",
            "--kind",
            "lock",
            "--json",
            str(report),
            "--junit-xml",
            str(junit),
        ]
    )
    assert code == 2
    doc = valid("check", json.loads(report.read_text()))
    assert doc["verdict"] == "bad-input" and doc["exit_code"] == 2 and "nosuch" in doc["error"]
    (suite,) = list(JUnitXml.fromfile(str(junit)))
    assert suite.errors == 1 and "nosuch" in next(iter(suite)).result[0].message
    code = main(["stress", "--only", "nosuch", "--json", str(report), "--out", str(tmp_path / "runs")])
    assert code == 2 and valid("stress", json.loads(report.read_text()))["verdict"] == "bad-input"
    assert not (tmp_path / "runs").exists()
