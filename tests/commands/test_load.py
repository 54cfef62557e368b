"""`contend load`: bad input is refused before anything runs; a tiny sweep runs end to end."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from contend.cli import main

ROOT = Path(__file__).resolve().parents[2]
#: Users' implementations (tests/fixtures), importable from the repository's top directory.
LOCK = "tests.fixtures.foreign.redispy_lock:make"
#: A registry that breaks gap-free ids by construction: no race has to happen in real time.
RACY_REGISTRY = "tests.fixtures.user_registry:make_gappy"
REFUSING_REGISTRY = "tests.fixtures.user_registry:make_refusing"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--strategy", "nope"], "none of --strategy nope applies to the registry workload; it has: watch"),
        (
            ["--workload", "counter", "--strategy", "watch", "--strategy", "nope"],
            "--strategy nope is unknown",
        ),
        (["--workload", "registry", "--strategy", "fine_locks"], "none of --strategy fine_locks applies"),
        (["--redis-url", "redis://127.0.0.1:1/0"], "cannot reach Redis at redis://127.0.0.1:1/0"),
        (["--impl", "nope.mod:make", "--kind", "lock"], "--impl 'nope.mod:make': cannot import 'nope.mod'"),
        (["--impl", LOCK, "--kind", "lock", "--strategy", "watch"], "and --strategy watch: choose one"),
        (["--impl", LOCK, "--kind", "lock", "--workload", "registry"], "runs in the counter and transfer"),
        (["--impl", LOCK, "--kind", "semaphore"], "not a semaphore; check it with contend check --impl"),
        (["--impl", LOCK], "--impl tests.fixtures.foreign.redispy_lock:make needs --kind"),
        (
            ["--impl", LOCK, "--kind", "registry"],
            "a registry factory is called as factory(client: redis.Redis, namespace: str)",
        ),
        (
            ["--impl", "tests.fixtures.user_registry:wrong_arity", "--kind", "registry"],
            "too many positional arguments",
        ),
        (["--kind", "lock"], "--kind lock names the protocol of --impl"),
        (["--processes", "0"], "--processes must be a whole number > 0, got 0"),
        (["--processes", "1,-2"], "--processes must be a whole number > 0, got -2"),
        (["--processes=-1"], "--processes must be a whole number > 0, got -1"),
        (["--processes", "1,2.5"], "--processes needs whole numbers > 0 separated by commas, e.g. 1,2,4"),
        (["--processes", "x"], "--processes needs whole numbers > 0 separated by commas"),
        (
            ["--processes", ""],
            "--processes needs whole numbers > 0 separated by commas, e.g. 1,2,4; got nothing",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    out = tmp_path / "run"
    assert main(["load", "--out", str(out), *args]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and message in err
    assert not out.exists(), "nothing is written"


@pytest.mark.parametrize(
    "args", [["--users", "0"], ["--hot-keys", "1,0"], ["--duration", "0"], ["--users", "x"]]
)
def test_bad_numbers_are_refused_by_the_parser(tmp_path, capsys, args):
    with pytest.raises(SystemExit) as info:
        main(["load", "--out", str(tmp_path / "run"), *args])
    assert info.value.code == 2
    assert "contend load: error: argument" in capsys.readouterr().err


def test_an_existing_sweep_is_not_overwritten(tmp_path, capsys):
    raw = tmp_path / "run" / "raw"
    raw.mkdir(parents=True)
    (raw / "sweep.json").write_text("{}")
    assert main(["load", "--out", str(tmp_path / "run")]) == 2
    assert "already holds a sweep" in capsys.readouterr().err


@pytest.mark.slow
def test_a_tiny_sweep_runs_and_reports(contend_target, tmp_path, capsys):
    out = tmp_path / "run"
    code = main(
        [
            "load", "--redis-url", contend_target.url, "--out", str(out),
            "--workload", "counter", "--strategy", "watch",
            "--users", "1,2", "--hot-keys", "1", "--duration", "1", "--ceiling-duration", "0.3", "--processes", "1",
        ]
    )  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.err
    sweep = json.loads((out / "raw" / "sweep.json").read_text())
    assert len(sweep["points"]) == 2 and all(p["ok"] for p in sweep["points"])
    assert [c["clients"] for c in sweep["ceiling"]] == [1, 2]
    assert sweep["machine"]["cores"] >= 1 and sweep["server"]["version"]
    assert (out / "raw" / "counter" / "watch" / "u2-h1_stats.csv").is_file()
    for name in ("index.html", "report.md", "points.csv", "counter-throughput.png"):
        assert (out / name).is_file(), name
    assert "counter/watch" in printed.out and "report:" in printed.out


@pytest.mark.soak  # the tiny sweep above runs the same pipeline, and CI runs `contend load` from a wheel
def test_the_quick_sweep_runs_end_to_end_with_its_defaults(contend_target, tmp_path, capsys):
    """The README's `contend load` with its default run time, workload, strategies and processes,
    narrowed to one user count and one hot-key count: what a fresh install runs first."""
    out = tmp_path / "quick"
    code = main(
        ["load", "--redis-url", contend_target.url, "--out", str(out), "--users", "1", "--hot-keys", "1"]
    )
    printed = capsys.readouterr()
    assert code == 0, printed.err
    sweep = json.loads((out / "raw" / "sweep.json").read_text())
    assert [p["strategy"] for p in sweep["points"]] == ["watch", "lock_first", "lua"]
    assert all(p["ok"] for p in sweep["points"]), sweep["points"]
    assert (out / "index.html").is_file()


@pytest.mark.slow
def test_a_users_lock_is_swept_under_its_own_name(contend_target, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)  # Locust imports --impl from the current directory, as contend check does
    out = tmp_path / "run"
    code = main(
        [
            "load", "--redis-url", contend_target.url, "--out", str(out), "--no-report",
            "--impl", LOCK, "--kind", "lock", "--workload", "counter",
            "--users", "2", "--hot-keys", "1", "--duration", "1", "--ceiling-duration", "0.3", "--processes", "1",
        ]
    )  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.err
    sweep = json.loads((out / "raw" / "sweep.json").read_text())
    assert sweep["plan"]["impl"] == LOCK and sweep["plan"]["kind"] == "lock"
    (point,) = sweep["points"]
    assert point["ok"] and point["strategy"] == LOCK and point["kind"] == "lock"
    assert (
        out / "raw" / "counter" / "tests.fixtures.foreign.redispy_lock_make" / "u2-h1_stats.csv"
    ).is_file()
    assert f"counter/{LOCK}" in printed.out


@pytest.mark.slow
def test_a_racy_users_registry_fails_the_sweep(contend_target, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(ROOT)
    out = tmp_path / "run"
    code = main(
        [
            "load", "--redis-url", contend_target.url, "--out", str(out), "--no-report",
            "--impl", RACY_REGISTRY, "--kind", "registry",
            "--users", "4", "--hot-keys", "1", "--duration", "1", "--ceiling-duration", "0.3", "--processes", "1",
        ]
    )  # fmt: skip
    printed = capsys.readouterr()
    assert code == 1, printed.err
    (point,) = json.loads((out / "raw" / "sweep.json").read_text())["points"]
    assert not point["invariant_ok"] and point["strategy"] == RACY_REGISTRY and point["kind"] == "user"
    assert f"registry/{RACY_REGISTRY}" in printed.err and "invariant broken" in printed.err


@pytest.mark.slow
def test_a_sweep_in_which_nothing_commits_fails_and_the_report_says_why(
    contend_target, tmp_path, capsys, monkeypatch
):
    """Every register() raises: the registry is empty and consistent, yet the point measured nothing."""
    monkeypatch.chdir(ROOT)
    out = tmp_path / "run"
    code = main(
        [
            "load", "--redis-url", contend_target.url, "--out", str(out),
            "--impl", REFUSING_REGISTRY, "--kind", "registry",
            "--users", "2", "--hot-keys", "1", "--duration", "1", "--ceiling-duration", "0.3", "--processes", "1",
        ]
    )  # fmt: skip
    printed = capsys.readouterr()
    assert code == 1, printed.err
    (point,) = json.loads((out / "raw" / "sweep.json").read_text())["points"]
    assert point["invariant_ok"] and not point["progress_ok"] and not point["ok"]
    assert "run failed: no operation committed" in printed.err
    report = (out / "report.md").read_text()
    assert "**1 of 1 runs failed**" in report and "| nothing committed | 0 |" in report
    assert "All 1 runs kept their invariant" not in report
    assert f"registry/{REFUSING_REGISTRY} " in report and "(100%; 0 commits)" in report


@pytest.mark.soak  # two Locust runs; tests/load/test_harness.py runs a master with two workers by default
def test_a_sweep_over_process_counts_compares_them_in_one_run(contend_target, tmp_path, capsys):
    """Each point at 1 and 2 Locust processes, the raw ceiling per count, and the comparison."""
    out = tmp_path / "run"
    code = main(
        [
            "load", "--redis-url", contend_target.url, "--out", str(out),
            "--workload", "counter", "--strategy", "incr", "--users", "2", "--hot-keys", "1",
            "--duration", "3", "--ceiling-duration", "0.3", "--processes", "2,1",
        ]
    )  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.err
    sweep = json.loads((out / "raw" / "sweep.json").read_text())
    assert sweep["plan"]["processes"] == [1, 2]
    assert [(p["processes"], p["ok"]) for p in sweep["points"]] == [(1, True), (2, True)]
    for point in sweep["points"]:  # measured over Locust's window: sampled beside it, and by each process
        assert point["server_cpu"] is not None and point["generator_cpu"] is not None
        assert point["machine_cpu"] is not None or not Path("/proc/stat").exists()
    assert [(c["clients"], c["processes"]) for c in sweep["ceiling"]] == [(2, 1), (2, 2)]
    assert "in 2 processes" in sweep["ceiling"][1]["method"]
    assert (out / "raw" / "counter" / "incr" / "u2-h1-p2_stats.csv").is_file()
    report = (out / "report.md").read_text()
    assert "Locust processes: where the load generator, not Redis, was the limit" in report
    # Which limit it names depends on this machine's load at the time; that it names one does not.
    (verdict,) = [
        line for line in report.splitlines() if line.startswith("counter/incr, 2 users, 1 hot key: ")
    ]
    assert "the limit (" in verdict
    assert "2 Locust processes: commits/s" in report
    assert "Locust processes: commits/s and raw ceiling beside the fewest" in printed.out
    points = list(csv.DictReader((out / "points.csv").open()))
    assert sorted(r["processes"] for r in points) == ["1", "2"]
