"""Where the timeline puts everything: processes packed into lanes, operations and nemesis faults
on a time axis (ms, or record positions when the history has no times), and the view the page
opens on. contend.history.timeline_svg draws what this places."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, field
from typing import Any

from contend.history.records import Call, Record, show

#: Width in px of the drawn lanes: the whole first screen, whatever the run's length.
PLOT = 1100
#: Width of the lane names' column, which never moves.
LEFT = 150
#: Height of the overview strip and the axis above the lanes.
TOP = 64
LANE = 22
BAR = 14
#: A bar is at least this wide, however short its operation.
MIN_BAR = 3
#: ... and an operation involved in the violation at least this wide.
INVOLVED_BAR = 8
#: Estimated px per character of an 11 px label (the script uses the same).
CHAR = 6.6
#: A typical operation's label is this wide at the zoom a page without a violation opens at.
READABLE = 90
#: How many calls after a violation's own its view may take in, looking for each holder's release.
SPAN_AFTER = 3
#: Values are shown whole up to this length (labels then show the operation's name alone).
FULL = 400


@dataclass
class Band:
    """A nemesis fault from its start to its stop (or a single event when `t1` is `t0`)."""

    name: str
    t0: float
    t1: float
    detail: str


@dataclass
class Layout:
    """Where everything goes: times in the axis' unit (ms, or record positions), lanes, the view."""

    calls: list[Call]
    lane_of: dict[Any, int]
    lanes: list[list[Any]]
    origin: int
    scale: float
    unit: str
    ends: dict[int, float]
    bands: list[Band]
    start: float
    stop: float
    view: tuple[float, float]
    involved: set[int] = field(default_factory=set)

    def t(self, raw: int) -> float:
        return (raw - self.origin) * self.scale

    def x(self, t: float) -> float:
        lo, hi = self.view
        return LEFT + (t - lo) / (hi - lo) * PLOT


def window(calls: list[Call], focus: list[int], max_calls: int) -> tuple[list[Call], str]:
    """At most `max_calls` calls by call time, around the first of `focus`, and a note of what was left out."""
    if len(calls) <= max_calls:
        return calls, ""
    ordered = sorted(calls, key=lambda c: (c.start, c.id))
    centre = next((k for k, c in enumerate(ordered) if focus and c.id == focus[0]), 0)
    lo = max(0, min(centre - max_calls // 2, len(ordered) - max_calls))
    shown = ordered[lo : lo + max_calls]
    return shown, (
        f"Showing {len(shown)} of {len(calls)} operations (by call time, "
        f"{'around the violation' if focus else 'from the start'})."
    )


def violation_span(focus: list[Call], calls: list[Call]) -> list[Call]:
    """The calls a violation's view must hold: its own, and for each of its processes what it did
    up to the release that ends the critical section its calls are in (at most SPAN_AFTER calls
    on, and none when no release comes by then), so the view shows where each holder let go."""
    chosen = list(focus)
    for process in dict.fromkeys(c.process for c in focus):
        own = sorted((c for c in calls if c.process == process), key=lambda c: (c.start, c.id))
        last = max(c.start for c in focus if c.process == process)
        after = [c for c in own if c.start > last][:SPAN_AFTER]
        release = next((k for k, c in enumerate(after) if c.f == "release"), None)
        if release is not None:
            chosen += [c for c in after[: release + 1] if c not in chosen]
    return chosen


def lay_out(calls: list[Call], nemesis: list[Record], involved: set[int], focus: list[int]) -> Layout:
    """Place `calls` and the nemesis' faults; the view opens on the `focus` calls (see _first_view)."""
    timed = any(c.invoke.time is not None for c in calls)
    raw = [c.start for c in calls] + [c.end for c in calls if c.end is not None]
    raw += [r.time for r in nemesis if r.time is not None]
    origin = min(raw) if raw else 0
    scale = 1e-6 if timed else 1.0
    unit = "ms" if timed else "record"
    lane_of, lanes = _lanes(calls)
    layout = Layout(calls, lane_of, lanes, origin, scale, unit, {}, [], 0.0, 1.0, (0.0, 1.0), involved)
    stop = max((layout.t(v) for v in raw), default=1.0)
    layout.bands = _bands(nemesis, layout, stop)
    layout.start, layout.stop = 0.0, max(stop, 1e-3)
    layout.ends = _info_ends(calls, lane_of, layout)
    layout.view = _first_view(layout, [c for c in calls if c.id in set(focus)])
    return layout


def _lanes(calls: list[Call]) -> tuple[dict[Any, int], list[list[Any]]]:
    """Processes packed into lanes: one that starts after another's last operation ended takes its
    lane (a process whose operation was lost ends at that operation's call); a process named by a
    string (the harness's final read) keeps a lane of its own."""
    spans: dict[Any, list[int]] = {}
    for c in calls:
        end = c.end if c.end is not None else c.start
        span = spans.setdefault(c.process, [c.start, end])
        span[0], span[1] = min(span[0], c.start), max(span[1], end)
    lanes: list[list[Any]] = []
    free_at: list[float] = []
    lane_of: dict[Any, int] = {}
    for p, (lo, hi) in sorted(spans.items(), key=lambda kv: (kv[1][0], _lane_key(kv[0]))):
        named = isinstance(p, str)  # the harness's own ("final"): a lane of its own, shared with none
        k = None if named else next((i for i, t in enumerate(free_at) if t < lo), None)
        if k is None:
            lanes.append([])
            free_at.append(hi)
            k = len(lanes) - 1
        lanes[k].append(p)
        free_at[k] = float("inf") if named else hi
        lane_of[p] = k
    return lane_of, lanes


def _lane_key(p: Any) -> tuple[int, Any]:
    return (0, p) if isinstance(p, int) else (1, str(p))


def _info_ends(calls: list[Call], lane_of: dict[Any, int], layout: Layout) -> dict[int, float]:
    """Where an operation that never returned is drawn to: the next call in its lane, or the end."""
    starts: dict[int, list[float]] = {}
    for c in calls:
        starts.setdefault(lane_of[c.process], []).append(layout.t(c.start))
    for s in starts.values():
        s.sort()
    ends: dict[int, float] = {}
    for c in calls:
        if c.end is None:
            t = layout.t(c.start)
            ends[c.id] = next((s for s in starts[lane_of[c.process]] if s > t), layout.stop)
    return ends


def _bands(nemesis: list[Record], layout: Layout, stop: float) -> list[Band]:
    """Nemesis records as faults: a `start` opens a band of its nemesis, the next `stop` closes it;
    any other event is a band of no width."""
    bands: list[Band] = []
    open_: dict[str, Band] = {}
    for r in nemesis:
        if r.time is None:
            continue
        t = layout.t(r.time)
        phase = _phase(r)
        name = r.f if r.f not in ("start", "stop") else "nemesis"
        detail = f"{r.f} {'' if r.value is None else show(r.value, FULL)}".strip()
        if phase == "start":
            if name not in open_:
                open_[name] = Band(name, t, stop, detail)
                bands.append(open_[name])
        elif phase == "stop" and name in open_:
            band = open_.pop(name)
            band.t1, band.detail = t, f"{band.detail}\n{detail}"
        elif phase != "stop":
            bands.append(Band(name, t, t, detail))
    return bands


def _phase(r: Record) -> str:
    for phase in ("start", "stop"):
        if r.f == phase or str(r.value).startswith(phase) or str(r.f).startswith(phase):
            return phase
    return ""


def _first_view(layout: Layout, focus: list[Call]) -> tuple[float, float]:
    """The violation with some context; else the first fault; else the start, readable."""
    whole = layout.stop - layout.start
    durations = [layout.t(c.end) - layout.t(c.start) for c in layout.calls if c.end is not None]
    typical = statistics.median(durations) if durations else whole / 20
    readable = max(typical * PLOT / READABLE, whole / 2000)  # one typical label's width
    if focus:
        lo = min(layout.t(c.start) for c in focus)
        hi = max(layout.t(c.end) if c.end is not None else layout.ends[c.id] for c in focus)
        for b in layout.bands:  # the fault that made it, when it overlaps and is not the whole run
            if b.t0 <= hi and b.t1 >= lo and b.t1 - b.t0 <= max(50 * max(hi - lo, readable), whole / 5):
                lo, hi = min(lo, b.t0), max(hi, b.t1)
    elif layout.bands:  # where the first fault starts, readable
        lo = layout.bands[0].t0 - readable / 4
        hi = lo + readable
    else:
        lo, hi = layout.start, layout.start + readable
    span = max(hi - lo, readable / 4)
    lo, hi = lo - span * 0.08, lo + span * 1.08
    lo = max(lo, layout.start - whole * 0.01)
    hi = min(max(hi, lo + 1e-3), layout.stop + whole * 0.01)
    return (lo, hi) if hi - lo < whole * 1.02 else (layout.start - whole * 0.01, layout.stop + whole * 0.01)
