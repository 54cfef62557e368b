"""The report's plots: one PNG per workload and figure, one panel per hot-key count."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import matplotlib.ticker
from matplotlib.axes import Axes

from contend.report.data import LOCK, OPTIMISTIC, SweepData, SweepRow

DPI = 80
PANEL = (4.2, 3.2)


def _colors(data: SweepData, workload: str) -> dict[str, str]:
    palette = plt.get_cmap("tab10")
    return {s: matplotlib.colors.to_hex(palette(i % 10)) for i, s in enumerate(data.strategies(workload))}


def _figure(data: SweepData, workload: str, title: str) -> tuple[plt.Figure, list[Axes]]:
    hots = data.hot_keys(workload)
    fig, axes = plt.subplots(
        1, len(hots), figsize=(PANEL[0] * len(hots), PANEL[1]), dpi=DPI, sharey=True, squeeze=False
    )
    fig.suptitle(title, fontsize=11)
    for ax, hot in zip(axes[0], hots, strict=True):
        ax.set_title(f"{hot} hot key{'s' if hot != 1 else ''}", fontsize=10)
        ax.set_xscale("log", base=2)
        ax.set_xticks(data.users)
        ax.set_xticklabels([str(u) for u in data.users])
        ax.set_xlabel("users")
        ax.grid(True, alpha=0.3)
    return fig, list(axes[0])


def _lines(
    ax: Axes,
    data: SweepData,
    workload: str,
    hot: int,
    value: Callable[[SweepRow], float | None],
    colors: dict[str, str],
    *,
    kinds: tuple[str, ...] | None = None,
    style: str = "-",
    label_suffix: str = "",
    spread: Callable[[SweepRow], tuple[float, float] | None] | None = None,
) -> bool:
    drew = False
    for strategy in data.strategies(workload):
        rows = [r for r in data.series(workload, strategy, hot) if kinds is None or r.kind in kinds]
        points = [(r.users, v, r.ok) for r in rows if (v := value(r)) is not None]
        if not points:
            continue
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        ax.plot(xs, ys, style, marker="o", ms=3, color=colors[strategy], label=strategy + label_suffix)
        bands = [(r.users, iv) for r in rows if spread is not None and (iv := spread(r)) is not None]
        if bands:  # the rate's 95 % interval: where two strategies' bands overlap, it is noise
            ax.fill_between(
                [b[0] for b in bands], [b[1][0] for b in bands], [b[1][1] for b in bands],
                color=colors[strategy], alpha=0.18, lw=0,
            )  # fmt: skip
        bad = [(x, y) for x, y, ok in points if not ok]
        if bad:
            ax.plot([b[0] for b in bad], [b[1] for b in bad], "x", color="red", ms=9, mew=2)
        drew = True
    return drew


def _save(fig: plt.Figure, axes: list[Axes], path: Path, legend: bool = True) -> Path:
    if legend:
        handles, labels = axes[0].get_legend_handles_labels()
        for ax in axes[1:]:
            for h, lbl in zip(*ax.get_legend_handles_labels(), strict=True):
                if lbl not in labels:
                    handles.append(h)
                    labels.append(lbl)
        fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize=8, frameon=False)
    fig.tight_layout()
    fig.savefig(path, bbox_inches="tight", dpi=DPI)
    plt.close(fig)
    return path


def _ceiling(data: SweepData, workload: str) -> tuple[dict[int, float], str]:
    """The raw ceiling a workload's rates are read against, by clients, and what it counts: the
    jobs workload's LPUSH/RPOP pairs, the others' PING round trips."""
    if workload == "jobs":
        return data.job_ceiling, "LPUSH+RPOP pairs"
    return data.ceiling, "PING round trips"


def throughput(data: SweepData, workload: str, out: Path) -> Path:
    """Committed operations per second against users, with each rate's 95 % interval as a band;
    on the strategies' own scale (the raw ceiling, often ten times higher, has a plot of its own)."""
    colors = _colors(data, workload)
    ceiling = sorted(_ceiling(data, workload)[0].values())
    note = f" (raw ceiling {_k(ceiling[0])}–{_k(ceiling[-1])}/s: see the ceiling plot)" if ceiling else ""
    fig, axes = _figure(data, workload, f"{workload}: committed operations per second{note}")
    for ax, hot in zip(axes, data.hot_keys(workload), strict=True):
        _lines(
            ax,
            data,
            workload,
            hot,
            lambda r: r.committed_per_s,
            colors,
            spread=lambda r: r.committed_interval,
        )
    _from_zero(axes)
    axes[0].set_ylabel("commits / s")
    return _save(fig, axes, out / f"{workload}-throughput.png")


def of_ceiling(data: SweepData, workload: str, out: Path) -> Path | None:
    """Each strategy's committed rate as a fraction of the raw ceiling at the same clients."""
    ceiling, counts = _ceiling(data, workload)
    if not ceiling:
        return None
    colors = _colors(data, workload)
    fig, axes = _figure(data, workload, f"{workload}: commits per second ÷ the raw ceiling ({counts})")
    for ax, hot in zip(axes, data.hot_keys(workload), strict=True):
        _lines(ax, data, workload, hot, lambda r: r.of_ceiling, colors)
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda v, _: f"{v:.2g}×"))
    _from_zero(axes)
    axes[0].set_ylabel("× raw ceiling")
    return _save(fig, axes, out / f"{workload}-ceiling.png")


def _from_zero(axes: list[Axes]) -> None:
    """Start the panels' shared y axis at 0, once every panel is drawn: set on each panel while
    drawing, the top froze at the first panel's highest point and cut off the others'."""
    axes[0].autoscale_view()
    axes[0].set_ylim(bottom=0)


def _k(rate: float) -> str:
    return f"{rate / 1000:.0f}k" if rate >= 10_000 else f"{rate:,.0f}"


def retries(data: SweepData, workload: str, out: Path) -> Path | None:
    """Retries per commit: aborted EXECs (WATCH) or failed lock attempts (lock-first)."""
    colors = _colors(data, workload)
    fig, axes = _figure(data, workload, f"{workload}: retries per commit")
    drew = False
    for ax, hot in zip(axes, data.hot_keys(workload), strict=True):
        drew |= _lines(
            ax, data, workload, hot, lambda r: r.retries_per_commit, colors, kinds=(OPTIMISTIC, LOCK)
        )
        ax.set_yscale("symlog", linthresh=0.01)
    _from_zero(axes)
    axes[0].set_ylabel("retries / commit")
    if not drew:
        plt.close(fig)
        return None
    return _save(fig, axes, out / f"{workload}-retries.png")


def latency(data: SweepData, workload: str, out: Path) -> Path:
    """p50 (solid) and p99 (dashed) of an operation, in ms."""
    colors = _colors(data, workload)
    fig, axes = _figure(data, workload, f"{workload}: latency of one operation, p50 (solid) and p99 (dashed)")
    for ax, hot in zip(axes, data.hot_keys(workload), strict=True):
        _lines(ax, data, workload, hot, lambda r: r.p50_ms, colors)
        _lines(ax, data, workload, hot, lambda r: r.p99_ms, colors, style="--", label_suffix=" p99")
        ax.set_yscale("log")
    axes[0].set_ylabel("ms")
    return _save(fig, axes, out / f"{workload}-latency.png")


def lock_wait(data: SweepData, workload: str, out: Path) -> Path | None:
    """Mean time waiting for the lock (solid) against mean time holding it (dashed)."""
    colors = _colors(data, workload)
    fig, axes = _figure(data, workload, f"{workload}: lock wait (solid) vs hold (dashed), means")
    drew = False
    for ax, hot in zip(axes, data.hot_keys(workload), strict=True):
        drew |= _lines(
            ax,
            data,
            workload,
            hot,
            lambda r: r.lock_wait_mean_ms,
            colors,
            kinds=(LOCK,),
            label_suffix=" wait",
        )
        _lines(
            ax, data, workload, hot, lambda r: r.lock_hold_mean_ms, colors, kinds=(LOCK,), style="--",
            label_suffix=" hold",
        )  # fmt: skip
        ax.set_yscale("log")
    axes[0].set_ylabel("ms")
    if not drew:
        plt.close(fig)
        return None
    return _save(fig, axes, out / f"{workload}-lock-wait.png")


def fairness(data: SweepData, workload: str, out: Path) -> Path:
    """Jain's fairness index over per-user commit counts (1: all users committed equally)."""
    colors = _colors(data, workload)
    fig, axes = _figure(data, workload, f"{workload}: Jain's fairness index over per-user commits")
    for ax, hot in zip(axes, data.hot_keys(workload), strict=True):
        _lines(ax, data, workload, hot, lambda r: r.jain_index, colors)
        ax.set_ylim(0, 1.05)
    axes[0].set_ylabel("Jain's index")
    return _save(fig, axes, out / f"{workload}-fairness.png")


def all_plots(data: SweepData, out: Path) -> dict[str, list[Path]]:
    """Every plot of every workload, written to `out`."""
    made: dict[str, list[Path]] = {}
    for workload in data.workloads:
        paths = [
            throughput(data, workload, out),
            of_ceiling(data, workload, out),
            retries(data, workload, out),
            latency(data, workload, out),
            lock_wait(data, workload, out),
            fairness(data, workload, out),
        ]
        made[workload] = [p for p in paths if p is not None]
    return made
