"""`contend report` on a small hand-made sweep directory: files written, crossovers found, bad input refused."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from contend.cli import main
from contend.report.build import build_report, crossovers, load_sweep

USERS = (1, 4, 16)
CEILING = {1: 10_000.0, 4: 12_000.0, 16: 13_000.0}
#: committed/s by (strategy, hot keys): lock_first overtakes watch from 4 users on 1 hot key, never on 10.
RATES = {
    ("watch", 1): (1000, 900, 500),
    ("lock_first", 1): (800, 950, 900),
    ("lua", 1): (5000, 5200, 5300),
    ("watch", 10): (1000, 1500, 1800),
    ("lock_first", 10): (800, 1000, 1200),
    ("lua", 10): (5000, 5200, 5300),
}
KINDS = {"watch": "optimistic", "lock_first": "lock", "lua": "server"}


def make_sweep(
    root: Path,
    *,
    broken: tuple[str, int, int] | None = None,
    spread: dict[tuple[str, int], float] | None = None,
    rates: dict[tuple[str, int], tuple[int, int, int]] | None = None,
) -> Path:
    """A sweep directory shaped like `contend load`'s: root/raw/sweep.json, Locust CSVs, contend JSON."""
    raw = root / "raw"
    points = []
    for (strategy, hot), series in (rates or RATES).items():
        for users, rate in zip(USERS, series, strict=True):
            slug = f"registry/{strategy}/u{users}-h{hot}"
            (raw / slug).parent.mkdir(parents=True, exist_ok=True)
            requests = int(rate * 2)
            ok = broken != (strategy, users, hot)
            with open(raw / f"{slug}_stats.csv", "w", newline="") as f:
                writer = csv.writer(f)
                writer.writerow(
                    ["Type", "Name", "Request Count", "Failure Count", "Requests/s", "50%", "99%"]
                )
                writer.writerow(["registry", strategy, requests, 0, rate, 0.25 * users, 2.5 * users])
                writer.writerow(["", "Aggregated", requests, 0, rate, 0.25, 2.5])
            lock = strategy == "lock_first"
            contend = {
                "requests": requests,
                "commits": requests,
                "retries_per_commit": 0.0 if strategy == "lua" else 0.1 * users,
                "round_trips_per_commit": 5.0,
                "lock_wait_mean_ms": 0.1 * users if lock else None,
                "lock_wait_p99_ms": 1.0 * users if lock else None,
                "lock_hold_mean_ms": 0.3 if lock else None,
                "jain_index": 1.0 - 0.01 * users,
                "commit_rate_spread": (spread or {}).get((strategy, hot)),
                "commit_windows": 8 if spread else 0,
            }
            summary = {
                "ok": ok,
                "workloads": {
                    "registry": {
                        "ok": ok,
                        "verdict": ["..."],
                        "locust": {"requests_per_s": rate},
                        "contend": contend,
                    }
                },
            }
            (raw / f"{slug}.json").write_text(json.dumps(summary))
            points.append(
                {
                    "workload": "registry",
                    "strategy": strategy,
                    "users": users,
                    "hot_keys": hot,
                    "kind": KINDS[strategy],
                    "exit_code": 0 if ok else 3,
                    "invariant_ok": ok,
                    "ok": ok,
                    "csv": f"{slug}_stats.csv",
                    "summary": f"{slug}.json",
                    "log": f"{slug}.log",
                }
            )
    sweep = {
        "plan": {"seconds": 2.0, "processes": 1},
        "command": "contend load --users 1,4,16 --hot-keys 1,10",
        "started": "2026-01-02T03:04:05+00:00",
        "machine": {"cores": 2, "cpu": "Test CPU", "os": "Linux", "python": "3.11", "locust": "2.47.0"},
        "server": {"product": "Redis", "version": "6.2.5", "description": "embedded Redis 6.2.5"},
        "ceiling": [
            {"clients": c, "per_second": r, "method": f"redis-py PING loops, {c} gevent clients"}
            for c, r in CEILING.items()
        ],
        "points": points,
    }
    (raw / "sweep.json").write_text(json.dumps(sweep))
    return root


def test_crossovers_are_found(tmp_path):
    data = load_sweep(make_sweep(tmp_path))
    found = {(c.lock, c.hot_keys): c for c in crossovers(data)}
    one, ten = found["lock_first", 1], found["lock_first", 10]
    assert one.users == 4 and not one.always
    assert one.at_crossover is not None
    assert one.at_crossover.watch == pytest.approx(900 / 12_000)
    assert one.at_crossover.server == "lua" and one.at_crossover.best == pytest.approx(5200 / 12_000)
    assert ten.users is None and ten.at_crossover is None
    assert "never" in ten.describe()
    assert ten.at_most.users == 16 and ten.at_most.lock == pytest.approx(1200 / 13_000)


def test_a_crossover_is_named_only_where_the_intervals_separate(tmp_path):
    """±10 %: at 4 users lock_first's 950 and WATCH's 900 overlap (noise), at 16 users 900 and 500
    do not; on 10 hot keys lock_first is behind by more than the noise everywhere."""
    spread = {(s, h): 0.10 for s in KINDS for h in (1, 10)}
    data = load_sweep(make_sweep(tmp_path, spread=spread))
    found = {(c.lock, c.hot_keys): c for c in crossovers(data)}
    one, ten = found["lock_first", 1], found["lock_first", 10]
    assert one.users == 16 and one.describe() == "from 16 users; within noise at 4 users"
    assert ten.users is None and ten.describe() == "never: WATCH ahead at 16 users"
    row = data.get("registry", "lock_first", 4, 1)
    assert row is not None and row.committed_interval == pytest.approx((855.0, 1045.0))


def test_no_crossover_is_named_when_the_last_counts_are_within_noise(tmp_path):
    spread = {(s, h): 0.50 for s in KINDS for h in (1, 10)}
    found = {(c.lock, c.hot_keys): c for c in crossovers(load_sweep(make_sweep(tmp_path, spread=spread)))}
    one = found["lock_first", 1]
    assert one.users is None
    assert one.describe() == "within noise: the two rates' intervals overlap at 1, 4, 16 users"


def test_the_throughput_plot_keeps_the_strategies_on_their_own_scale(tmp_path, monkeypatch):
    """The raw ceiling (10k-13k/s here, strategies at 500-5,300/s) is not drawn on the strategies'
    axis, so it cannot flatten them; each rate has its interval as a band."""
    from contend.report import plots

    kept = {}
    monkeypatch.setattr(plots, "_save", lambda fig, axes, path, legend=True: kept.setdefault(path.name, axes))
    data = load_sweep(make_sweep(tmp_path, spread={(s, h): 0.05 for s in KINDS for h in (1, 10)}))
    plots.throughput(data, "registry", tmp_path)
    plots.of_ceiling(data, "registry", tmp_path)
    axes = kept["registry-throughput.png"]
    for ax in axes:
        assert ax.get_ylim()[1] < min(CEILING.values())
        assert not any("ceiling" in line.get_label() for line in ax.get_lines())
        assert ax.collections, "each strategy's 95 % interval is a band"
    assert "raw ceiling 10k–13k/s" in axes[0].figure.texts[0].get_text()
    ratio = kept["registry-ceiling.png"][0]
    assert ratio.get_ylim()[1] < 1  # every strategy below the ceiling, as a fraction of it


def test_every_panel_holds_its_points_when_a_later_panel_is_higher(tmp_path, monkeypatch):
    """The panels share their y axis: its top is the highest point of any panel, not of the first."""
    from contend.report import plots

    kept = {}
    monkeypatch.setattr(plots, "_save", lambda fig, axes, path, legend=True: kept.setdefault(path.name, axes))
    higher = {**RATES, ("lua", 10): (9000, 9500, 9900)}  # the 10-hot-keys panel tops the first
    data = load_sweep(make_sweep(tmp_path, rates=higher))
    for plot in (
        plots.throughput,
        plots.of_ceiling,
        plots.retries,
        plots.latency,
        plots.lock_wait,
        plots.fairness,
    ):
        plot(data, "registry", tmp_path)  # every picture of the report
    assert len(kept) >= 5, sorted(kept)
    for name, axes in kept.items():
        points = [y for ax in axes for line in ax.get_lines() for y in line.get_ydata()]
        for ax in axes:
            lo, hi = ax.get_ylim()
            assert lo <= min(points) and hi >= max(points), (name, (lo, hi), (min(points), max(points)))
            assert ax.get_yscale() == "log" or lo == 0, name  # rates and counts from 0


@pytest.mark.slow
def test_report_writes_html_markdown_plots_and_points(tmp_path):
    built = build_report(make_sweep(tmp_path))
    assert built.html == tmp_path / "index.html"
    names = {p.name for p in built.plots}
    assert names == {
        "registry-throughput.png",
        "registry-ceiling.png",
        "registry-retries.png",
        "registry-latency.png",
        "registry-lock-wait.png",
        "registry-fairness.png",
    }
    for plot in built.plots:
        assert plot.read_bytes()[:4] == b"\x89PNG"
    page = built.html.read_text()
    assert page.count("data:image/png;base64,") == 6
    assert 'src="registry' not in page, "the HTML embeds its plots"
    md = built.markdown.read_text()
    assert "Where lock-first overtakes WATCH" in md
    assert "| registry | lock_first | 1 | from 4 users |" in md
    assert "never: WATCH ahead at 16 users" in md
    assert "16 users on 1 hot key" in md and "0.04×" in md  # watch: 500 / 13,000
    assert "2-core Test CPU" in md and "Redis 6.2.5" in md and "`contend load --users 1,4,16" in md
    assert "![registry-throughput](registry-throughput.png)" in md
    assert "All 18 runs kept their invariant" in md
    rows = list(csv.DictReader(built.points.open()))
    assert len(rows) == 18 and {r["workload"] for r in rows} == {"registry"}


@pytest.mark.slow
def test_broken_runs_are_marked(tmp_path):
    build_report(make_sweep(tmp_path, broken=("watch", 16, 1)))
    md = (tmp_path / "report.md").read_text()
    assert "1 of 18 runs failed" in md and "watch ✗" in md


@pytest.mark.slow
def test_report_command_and_its_bad_input(tmp_path, capsys):
    sweep = make_sweep(tmp_path / "run")
    assert main(["report", str(sweep / "raw"), "--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "index.html").is_file() and (tmp_path / "out" / "report.md").is_file()
    capsys.readouterr()

    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", str(empty)]) == 2
    err = capsys.readouterr().err
    assert "is not a sweep directory" in err and "contend load" in err
    assert list(empty.iterdir()) == [], "nothing is written"

    assert main(["report", str(tmp_path / "missing")]) == 2
    assert "does not exist" in capsys.readouterr().err

    (empty / "sweep.json").write_text("{not json")
    assert main(["report", str(empty)]) == 2
    assert "is not a sweep description" in capsys.readouterr().err


def make_process_sweep(root: Path) -> Path:
    """One point run at 1, 2 and 4 Locust processes: one process is CPU-bound, two saturate 2 cores."""
    raw = root / "raw"
    (raw / "counter" / "incr").mkdir(parents=True)
    # commits/s, and the CPU of each Locust process, of Redis and of the whole machine
    runs = {1: (8000, 0.98, 0.2, 0.6), 2: (14000, 0.8, 0.35, 0.97), 4: (13000, 0.42, 0.3, 0.95)}
    points = []
    for procs, (rate, locust_cpu, redis_cpu, machine_cpu) in runs.items():
        slug = f"counter/incr/u4-h1-p{procs}"
        contend = {"requests": rate * 2, "commits": rate * 2}
        summary = {
            "workloads": {"counter": {"ok": True, "locust": {"requests_per_s": rate}, "contend": contend}}
        }
        (raw / f"{slug}.json").write_text(json.dumps(summary))
        points.append(
            {
                "workload": "counter", "strategy": "incr", "users": 4, "hot_keys": 1, "processes": procs,
                "kind": "server", "exit_code": 0, "invariant_ok": True, "ok": True,
                "csv": f"{slug}_stats.csv", "summary": f"{slug}.json", "log": f"{slug}.log",
                "generator_cpu": locust_cpu, "server_cpu": redis_cpu, "machine_cpu": machine_cpu,
            }
        )  # fmt: skip
    ceiling = [
        {
            "clients": 4,
            "processes": p,
            "per_second": r,
            "method": f"redis-py PING loops, 4 gevent clients in {p}",
        }
        for p, r in ((1, 10_000.0), (2, 20_000.0), (4, 19_000.0))
    ]
    sweep = {
        "plan": {"seconds": 2, "processes": [1, 2, 4]},
        "machine": {"cores": 2},
        "ceiling": ceiling,
        "points": points,
    }
    (raw / "sweep.json").write_text(json.dumps(sweep))
    return root


def test_process_counts_are_compared_with_the_fewest(tmp_path):
    from contend.report.build import process_blocks
    from contend.report.data import generator_verdicts, process_comparison_table

    data = load_sweep(make_process_sweep(tmp_path))
    assert data.process_counts == [1, 2, 4] and len(data.all_rows) == 3
    assert [r.processes for r in data.rows] == [4] and data.ceiling == {4: 19_000.0}
    header, rows = process_comparison_table(data)
    assert header[3:7] == ("commits/s", "× 1", "raw ceiling/s", "ceiling × 1")
    cores = "the machine's 2 cores"
    assert [row[2:] for row in rows] == [
        ("1", "8,000", "1.00×", "10,000", "1.00×", "0.80×", "98%", "20%", "60%", "one Locust process"),
        ("2", "14,000", "1.75×", "20,000", "2.00×", "0.70×", "2×80%", "35%", "97%", cores),
        ("4", "13,000", "1.62×", "19,000", "1.90×", "0.68×", "4×42%", "30%", "95%", cores),
    ]
    assert generator_verdicts(data) == [
        "counter/incr, 4 users, 1 hot key: one Locust process, not Redis, was the limit (Locust 98% CPU "
        "and commits/s rose up to 1.75× with more processes; Redis 20% CPU); "
        "2 Locust processes: commits/s 1.75×, raw ceiling 2.00×; 4 Locust processes: commits/s 1.62×, "
        "raw ceiling 1.90×."
    ]
    assert len(process_blocks(data)) == 4
    assert process_blocks(load_sweep(make_sweep(tmp_path / "one"))) == [], "one count: no comparison"


def test_the_limit_is_named_from_the_cpu_figures(tmp_path):
    from dataclasses import replace

    from contend.report.data import limit

    row = load_sweep(make_process_sweep(tmp_path)).all_rows[0]
    assert limit(row, 2) == "one Locust process"
    assert limit(replace(row, server_cpu=0.95), 2) == "Redis"
    assert limit(replace(row, processes=2, generator_cpu=0.92), 2) == "the Locust processes"
    assert limit(replace(row, generator_cpu=0.5, machine_cpu=0.95), 2) == "the machine's 2 cores"
    assert limit(replace(row, generator_cpu=0.5), 2) == "no CPU (round trips, contention)"
    assert limit(replace(row, generator_cpu=None, server_cpu=None, machine_cpu=None), 2) == (
        "no CPU (round trips, contention)"
    )


def test_a_point_that_more_processes_did_not_speed_up_was_not_limited_by_one_process(tmp_path):
    from dataclasses import replace

    from contend.report.data import generator_verdicts

    data = load_sweep(make_process_sweep(tmp_path))
    first, *more = data.all_rows
    data.all_rows = [replace(first, generator_cpu=0.7), *(replace(r, committed_per_s=8100.0) for r in more)]
    (line,) = generator_verdicts(data)
    assert "neither one Locust process nor Redis was the limit (Locust 70%, Redis 20% CPU; more" in line
    data.all_rows = [replace(first, server_cpu=0.95), *more]
    assert "Redis was the limit (Redis 95%, Locust 98% CPU)" in generator_verdicts(data)[0]
    data.all_rows = [replace(first, generator_cpu=0.6, machine_cpu=0.99), *more]  # others' load too
    assert (
        "the machine's cores were the limit (99% busy with anyone's processes; Locust 60%"
        in (generator_verdicts(data)[0])
    )
