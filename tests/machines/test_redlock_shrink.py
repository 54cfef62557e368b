"""The Redlock search's shrinking: bounded by a budget the user sets (`--shrink-seconds`), with
progress meanwhile; and a search in which no master was ever restarted is inconclusive."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import engine

from contend.commands.redlock import add_parser
from contend.machines import redlock
from contend.machines.redlock import SHRINK_SECONDS, ShrinkProgress
from contend.machines.settings import shrink_budget


def _last_failing(budget: float | None) -> list[int]:
    """The example Hypothesis reports for a test that fails on a large sum, shrunk within `budget`."""
    seen: list[list[int]] = []

    @settings(
        database=None, derandomize=True, phases=[Phase.generate, Phase.shrink], report_multiple_bugs=False
    )
    @given(st.lists(st.integers(min_value=0, max_value=1000), min_size=30, max_size=30))
    def fails(xs: list[int]) -> None:
        seen.append(xs)
        assert sum(xs) <= 5000

    try:
        if budget is None:
            fails()
        else:
            with shrink_budget(budget):
                fails()
    except AssertionError:
        pass
    return seen[-1]


def test_the_budget_bounds_hypothesis_shrinking_and_is_put_back():
    before = engine.MAX_SHRINKING_SECONDS
    shrunk, stopped = _last_failing(None), _last_failing(0)
    assert sum(shrunk) == 5001 and shrunk[:20] == [0] * 20  # shrunk all the way
    assert stopped != shrunk and sum(stopped) > 5000  # stopped at once: a failing example, larger
    assert before == engine.MAX_SHRINKING_SECONDS


def _machine(trips: int, failed: bool) -> SimpleNamespace:
    trace = [SimpleNamespace(sent=True)] * trips + [SimpleNamespace(sent=False)]
    return SimpleNamespace(violation=object() if failed else None, scheduler=SimpleNamespace(trace=trace))


def test_progress_tells_the_finding_again_then_the_shrinking(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(redlock.time, "monotonic", lambda: clock[0])
    lines: list[str] = []
    progress = ShrinkProgress(60, lines.append)
    for t, trips, failed in [
        (5, 40, False),
        (11, 40, False),
        (12, 33, True),
        (23, 20, True),
        (24, 25, False),
    ]:
        clock[0] = 100.0 + t
        progress.ended(_machine(trips, failed))  # type: ignore[arg-type]
    assert lines == [
        "shrinking: finding the counterexample again, 2 examples in",
        "shrinking: 11 s of up to 60 s, 4 examples tried, 2 failing; the smallest so far: 20 round trips",
    ]
    assert progress.shrinking() == 12.0


def test_the_command_takes_a_shrink_budget():
    import argparse

    parser = add_parser(argparse.ArgumentParser().add_subparsers(), argparse.ArgumentParser(add_help=False))
    assert parser.parse_args([]).shrink_seconds == SHRINK_SECONDS
    assert parser.parse_args(["--shrink-seconds", "30"]).shrink_seconds == 30.0


def test_a_search_in_which_no_master_restarted_is_inconclusive(monkeypatch, capsys):
    """Nothing found, and the restart the search is for never happened: exit 3, not a pass."""
    from contend.cli import main
    from contend.machines.redlock import Demo

    for restarts, code in ((0, 3), (4, 0)):
        found = Demo(times=[None], stats={"restarts": restarts} if restarts else {})
        monkeypatch.setattr("contend.commands.redlock.demo", lambda *a, found=found, **k: found)
        assert main(["redlock", "--runs", "1"]) == code
        out = capsys.readouterr().out
        assert ("no master was restarted in any example" in out) is (code == 3), out
    assert main(["redlock", "--runs", "1", "--no-restarts"]) == 0  # then none is asked for
