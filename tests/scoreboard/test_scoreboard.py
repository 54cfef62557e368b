"""`contend scoreboard`: the rows, the verdicts against expected.py, the report, bad input."""

from __future__ import annotations

import re
import shlex

import hypothesis
import pytest

from contend.cli import main
from contend.scoreboard import expected
from contend.scoreboard.libraries import LIBRARIES, Library, LibraryMissing, by_key
from contend.scoreboard.run import run_library

pytest.importorskip("sherlock")
pytest.importorskip("pottery")
pytest.importorskip("redis_lock")


@pytest.mark.slow
@pytest.mark.parametrize("key", [lib.key for lib in LIBRARIES if lib.key != "sherlock-no-expiry"])
def test_each_library_row_is_as_recorded(key, capsys):
    """A row per test (xdist spreads them): every claimed property of the library passes, quick."""
    code = main(["scoreboard", "--quick", "--lib", key, "--no-write"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "every verdict as recorded: 1 row(s)" in out
    assert "FAIL" not in out and "inconclusive" not in out


@pytest.mark.slow
def test_the_report_shows_a_pass_and_a_failure_with_its_evidence(tmp_path, capsys):
    code = main(
        ["scoreboard", "--quick", "--lib", "redis-py", "--lib", "sherlock-no-expiry", "--out", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    assert "every verdict as recorded" in out
    report = (tmp_path / "report.md").read_text()
    assert (tmp_path / "index.html").read_text().startswith("<!doctype html>")
    assert re.search(r"\| redis-py Lock \| [\d.]+ \| pass \| pass \| pass \| pass \| pass \|", report)
    # The one expected failure, with its evidence: trace, replay command, source, reproduction.
    assert re.search(r"\| sherlock RedisLock, expire=None \| [\d.]+ \| FAIL \(bug\) \|", report)
    assert "### mutual-exclusion: FAIL (bug)" in report
    assert "EVALSHA" in report and "-1  →  1" in report
    assert "contend scoreboard --lib sherlock-no-expiry --replay " in report
    assert "sherlock/lock.py" in report and "tests/scoreboard/reproductions/sherlock_no_expiry.py" in report


@pytest.mark.slow
def test_a_counterexample_replays_from_its_command(tmp_path, capsys):
    assert main(["scoreboard", "--quick", "--lib", "sherlock-no-expiry", "--out", str(tmp_path)]) == 0
    report = (tmp_path / "report.md").read_text()
    command = re.search(r"Replay: `(contend scoreboard [^`]+)`", report).group(1)
    capsys.readouterr()
    assert main(shlex.split(command)[1:]) == 0
    assert "replayed: fail: c1 acquired while c0 held" in capsys.readouterr().out


@pytest.mark.slow
def test_a_verdict_that_changes_fails_the_run(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(expected, "FINDINGS", ())  # as if sherlock were expected to pass
    assert main(["scoreboard", "--quick", "--lib", "sherlock-no-expiry", "--no-write"]) == 1
    out = capsys.readouterr().out
    assert "not as recorded in contend/scoreboard/expected.py" in out
    assert "sherlock-no-expiry · mutual-exclusion: fail, expected pass" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--lib", "nope"], "--lib 'nope' is not on the scoreboard; choose from redis-py"),
        (["--replay", f"{hypothesis.__version__}:AXic"], "give exactly one --lib NAME"),
        (["--lib", "redis-py", "--replay", "garbage"], "--replay"),
    ],
)
def test_bad_input_is_refused_before_anything_runs(argv, message, capsys):
    assert main(["scoreboard", *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err


def test_a_missing_library_is_skipped_with_the_command_that_installs_it(contend_target):
    missing = Library("ghost", "ghost lock", "contend-no-such-dist", "contend.adapters.ghost:factory")
    with pytest.raises(LibraryMissing, match=r"not installed \(pip install 'contend\[libs\]'\)"):
        missing.version()
    result = run_library(missing, contend_target, options=None)  # type: ignore[arg-type]
    assert result.row is None and "contend-no-such-dist is not installed" in result.skipped


def test_rows_are_chosen_by_key_in_scoreboard_order():
    assert [lib.key for lib in by_key(["sherlock", "redis-py"])] == ["redis-py", "sherlock"]
    assert len(by_key([])) == len(LIBRARIES)
