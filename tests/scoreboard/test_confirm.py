"""contend.scoreboard.confirm: a recorded finding a run did not meet is attempted again, with the
seeds after the run's and at the full board's sizes, until a check meets it or the attempts end.

The checks here are stand-ins (what run_battery would return), so that which attempt meets the
finding is chosen, not waited for; the rows that use it run against a real server in
test_scoreboard.py."""

from __future__ import annotations

from collections.abc import Sequence

from contend.check.battery import ResultRow
from contend.check.framework import FAIL, PASS, CheckOptions, CheckResult
from contend.scoreboard.confirm import FULL_EXAMPLES, again_name, confirm, full_sized, is_again
from contend.scoreboard.expected import FINDINGS
from contend.scoreboard.libraries import by_key
from contend.scoreboard.run import LibraryResult, checks_for, subject_for


class Board:
    """The row's results, and which finding is unmet: what LibraryResult.unconfirmed reads."""

    def __init__(self, meets_at: dict[int, tuple[str, ...]]) -> None:
        self.results: list[CheckResult] = []
        self.meets_at = meets_at  # seed → the properties the checks break with it
        self.runs: list[tuple[tuple[str, ...], CheckOptions]] = []

    def unmet(self) -> list[tuple[str, tuple[str, ...]]]:
        broken = {r.prop for r in self.results if r.status == FAIL}
        return [(p, ("model",)) for p in ("safe-release", "progress") if p not in broken]

    def run_again(self, checks: Sequence[str], options: CheckOptions) -> list[CheckResult]:
        self.runs.append((tuple(checks), options))
        broken = self.meets_at.get(options.seed, ())
        if broken:
            return [CheckResult("model", FAIL, f"broke {prop}", 0.1, prop) for prop in broken]
        return [CheckResult("model", PASS, "agreed", 0.1)]


def test_each_attempt_takes_the_next_seed_at_full_size_until_the_finding_is_met():
    board = Board({3: ("safe-release",), 4: ("progress",)})
    quick = CheckOptions(seed=0, model_ops=100, burst_clients=8, burst_rounds=4, schedule_examples=25)
    heard: list[str] = []
    confirm(board.unmet, board.run_again, quick, board.results, on_result=lambda r: heard.append(r.check))
    assert [o.seed for _, o in board.runs] == [1, 2, 3, 4]  # safe-release at 3, then progress at 4
    assert all(
        o.schedule_examples == FULL_EXAMPLES and o.model_ops == CheckOptions().model_ops
        for _, o in board.runs
    )
    assert heard == [again_name("model", s) for s in (1, 2, 3, 4)] == [r.check for r in board.results]
    assert all(is_again(r) for r in board.results) and board.unmet() == []


def test_an_attempt_that_meets_two_findings_ends_both():
    board = Board({2: ("safe-release", "progress")})
    confirm(board.unmet, board.run_again, CheckOptions(), board.results)
    assert [o.seed for _, o in board.runs] == [1, 2] and board.unmet() == []


def test_attempts_end_at_their_count_and_say_nothing_was_met():
    board = Board({})
    confirm(board.unmet, board.run_again, CheckOptions(seed=10), board.results, attempts=3)
    # Three attempts for safe-release, then three for progress, on the seeds after: none met either.
    assert [o.seed for _, o in board.runs] == [11, 12, 13, 14, 15, 16]
    assert all(r.status == PASS for r in board.results) and len(board.unmet()) == 2


def test_no_attempt_is_made_with_none_allowed_or_nothing_unmet():
    board = Board({})
    confirm(board.unmet, board.run_again, CheckOptions(), board.results, attempts=0)
    confirm(lambda: [], board.run_again, CheckOptions(), board.results)
    assert board.runs == [] and board.results == []


def test_full_size_never_shrinks_a_larger_run():
    big = CheckOptions(seed=4, schedule_examples=900, model_ops=1000)
    sized = full_sized(big, 5)
    assert (sized.seed, sized.schedule_examples, sized.model_ops) == (5, 900, 1000)


def test_a_finding_some_runs_miss_names_checks_of_its_row_that_meet_it():
    """Every `sometimes` finding can be attempted again: its `met_by` are checks its row runs."""
    for finding in FINDINGS:
        if finding.sometimes:
            (library,) = by_key([finding.library])
            assert finding.met_by, f"{finding.anchor}: which checks meet it?"
            assert set(finding.met_by) <= set(checks_for(library, None)), finding.anchor
        else:
            assert not finding.met_by, f"{finding.anchor}: every run meets it, nothing to attempt again"


def test_a_finding_the_run_met_is_not_said_to_be_met_by_an_attempt_after_it():
    """redis-semaphore's crash liveness is met by its own burst; an attempt for another finding
    that breaks it too does not make it "met by" that attempt."""
    (library,) = by_key(["redis-semaphore"])
    row = ResultRow(subject_for(library, lambda *a: None))
    result = LibraryResult(library, row=row)
    row.results += [
        CheckResult("burst", FAIL, "none acquired it", 0.1, "crash-liveness"),
        CheckResult("model", PASS, "agreed", 0.1),
        CheckResult("schedule", PASS, "200 interleavings", 0.1),  # judges every property
        CheckResult(again_name("model", 1), FAIL, "refused", 0.1, "crash-liveness"),
        CheckResult(again_name("model", 2), FAIL, "two holders", 0.1, "safe-release"),
    ]
    assert result.confirmed_by("crash-liveness") is None
    confirmed = result.confirmed_by("safe-release")
    assert confirmed is not None and confirmed.check == "model · again, seed 2"
    assert ("progress", ("model-n", "model")) in result.unconfirmed()
