"""A self-contained HTML timeline of a checked history, openable offline, that opens on the failure.

One lane per concurrent client (processes that follow one another, as Jepsen's do after a lost
reply, share a lane, named by all of them), each operation a bar from its call to its return on
a time axis in ms (in record order when the history has no times). The page opens on the
violation: the operations involved are drawn in red and the rest dimmed, with nemesis faults as
bands over the lanes; lane names stay put while the lanes zoom (wheel, buttons) and pan (drag),
and a strip above them shows where the view lies in the whole run. A label is drawn whole when
its bar is wide enough, else only the operation's name, else not at all; hovering a bar shows
everything about it. Without a violation the page opens on the first fault, else on the start,
at a zoom where a typical operation's label fits.
"""

from __future__ import annotations

import html
import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from contend.history.invariants import Violation
from contend.history.records import Call, Record, show
from contend.history.verdict import Linearizability, PartitionResult, Verdict

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
MAX_CALLS = 3000
#: Values are shown whole up to this length (labels then show the operation's name alone).
FULL = 400

_CSS = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; margin: 0 0 4px; }
.verdict { font-weight: bold; margin: 4px 0; }
.pass { color: #1a7f37; } .fail { color: #cf222e; } .open { color: #9a6700; }
.aside { color: #57606a; margin: 2px 0; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; }
svg { display: block; border: 1px solid #d0d7de; user-select: none; cursor: grab; }
svg text { font: 11px system-ui, sans-serif; }
rect.ok { fill: #8cb4ff; } rect.fail { fill: #d0d7de; } rect.info { fill: url(#fade); }
rect.prefix { fill: #7ee2a8; }
rect.involved { fill: #ff5a5a; stroke: #8b0000; stroke-width: 2; }
.dim { opacity: 0.3; }
rect.band { fill: #bf8700; fill-opacity: 0.13; stroke: #bf8700; stroke-opacity: 0.5; stroke-dasharray: 4 3; }
line.nemesis { stroke: #bf8700; stroke-dasharray: 4 3; }
text.band-label { fill: #7d4e00; }
rect.lanes-bg { fill: #fff; } rect.names-bg { fill: #f6f8fa; }
.axis line { stroke: #d0d7de; } .axis text { fill: #57606a; }
rect.overview { fill: #f6f8fa; stroke: #d0d7de; } rect.window { fill: #0969da; fill-opacity: 0.15; stroke: #0969da; }
.controls button { margin-right: 6px; }
table { border-collapse: collapse; margin-top: 8px; }
td, th { border: 1px solid #d0d7de; padding: 2px 6px; text-align: left; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 14px; height: 10px; margin-right: 4px; vertical-align: middle; }
text.involved-label { fill: #8b0000; font-weight: bold; }
li.violation { cursor: pointer; } li.violation:hover { text-decoration: underline; }
"""

_LEGEND = (
    '<p class="legend">'
    '<span><i class="swatch" style="background:#8cb4ff"></i>ok</span>'
    '<span><i class="swatch" style="background:#d0d7de"></i>fail (no effect)</span>'
    '<span><i class="swatch" style="background:linear-gradient(90deg,#ffb86b,#fff)"></i>'
    "info (may take effect any time after its call)</span>"
    '<span><i class="swatch" style="background:#7ee2a8"></i>longest linearizable prefix (#order)</span>'
    '<span><i class="swatch" style="background:#ff5a5a"></i>involved in the violation</span>'
    '<span><i class="swatch" style="background:rgba(191,135,0,.25);border:1px dashed #bf8700"></i>'
    "nemesis fault</span></p>"
)


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


def render_timeline(
    verdict: Verdict,
    *,
    title: str = "contend history check",
    violations: Sequence[Violation] = (),
    headline: str | None = None,
    max_calls: int = MAX_CALLS,
) -> str:
    """The HTML page, as a string. `violations`: the invariants' findings, drawn like a culprit;
    `headline`: the run's verdict in words (by default the checks' own)."""
    failing = next((p for p in verdict.partitions if p.outcome is Linearizability.NOT_LINEARIZABLE), None)
    culprit = failing.culprit if failing else None
    involved = {c.id for v in violations for c in v.calls} | ({culprit.id} if culprit else set())
    focus_ids = [c.id for c in violations[0].calls] if violations else ([culprit.id] if culprit else [])
    calls, note = _window(verdict.calls, focus_ids, max_calls)
    prefix_rank = {c.id: k + 1 for k, c in enumerate(failing.linearization)} if failing else {}
    layout = _layout(calls, verdict.nemesis, involved, focus_ids)
    word, css, line = _verdict_line(verdict, violations, headline)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)} · {_e(word)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="verdict {css}">{_e(line)}</p>',
    ]
    if violations or headline:
        parts.append(f'<p class="aside">linearizability: {_e(verdict.summary())}</p>')
    if violations:
        parts.append(_violation_list(violations, layout))
    if verdict.partitions:
        parts.append("<pre>" + _e("\n".join(p.explain() for p in verdict.partitions[:20])) + "</pre>")
    if note:
        parts.append(f"<p>{_e(note)}</p>")
    parts.append(_LEGEND)
    parts.append(_controls(layout, bool(involved)))
    parts.append(_svg(layout, prefix_rank, bool(involved), prefix_rank.keys()))
    if failing is not None:
        parts.append(_prefix_table(failing))
    parts.append(f"<script>{resources.files('contend.history').joinpath('timeline.js').read_text()}</script>")
    parts.append("</body></html>")
    return "\n".join(parts)


def write_timeline(
    verdict: Verdict,
    path: str | Path,
    *,
    title: str | None = None,
    violations: Sequence[Violation] = (),
    headline: str | None = None,
) -> Path:
    """Write the page to `path`; returns the path."""
    p = Path(path)
    page = render_timeline(
        verdict, title=title or "contend history check", violations=violations, headline=headline
    )
    p.write_text(page, encoding="utf-8")
    return p


def _verdict_line(
    verdict: Verdict, violations: Sequence[Violation], headline: str | None
) -> tuple[str, str, str]:
    """(the verdict in one word, its CSS class, the line): the title and this line agree."""
    if verdict.outcome is Linearizability.NOT_LINEARIZABLE:
        word, css = "VIOLATION", "fail"
        line = headline or f"VIOLATION — {verdict.summary()}"
    elif violations:
        word, css = "VIOLATION", "fail"
        line = headline or f"VIOLATION — {violations[0].check}: {violations[0].message}"
    elif verdict.outcome is Linearizability.UNKNOWN:
        word, css, line = "UNKNOWN", "open", headline or f"UNKNOWN — {verdict.summary()}"
    else:
        word, css, line = "VALID", "pass", headline or verdict.summary()
    if headline and not headline.startswith(word):  # e.g. "NO FAULT — …": the run's own word
        word, css = headline.split(" ", 1)[0], "open"
    return word, css, line


def _window(calls: list[Call], focus: list[int], max_calls: int) -> tuple[list[Call], str]:
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


def _layout(calls: list[Call], nemesis: list[Record], involved: set[int], focus: list[int]) -> Layout:
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
    lane (a process whose operation was lost ends at that operation's call)."""
    spans: dict[Any, list[int]] = {}
    for c in calls:
        end = c.end if c.end is not None else c.start
        span = spans.setdefault(c.process, [c.start, end])
        span[0], span[1] = min(span[0], c.start), max(span[1], end)
    lanes: list[list[Any]] = []
    free_at: list[int] = []
    lane_of: dict[Any, int] = {}
    for p, (lo, hi) in sorted(spans.items(), key=lambda kv: (kv[1][0], _lane_key(kv[0]))):
        k = next((i for i, t in enumerate(free_at) if t < lo), None)
        if k is None:
            lanes.append([])
            free_at.append(hi)
            k = len(lanes) - 1
        lanes[k].append(p)
        free_at[k] = hi
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


def _controls(layout: Layout, violation: bool) -> str:
    buttons = []
    if violation:
        buttons.append('<button data-view="focus">the violation</button>')
    if layout.bands:
        buttons.append('<button data-view="fault">first fault</button>')
    buttons += [
        '<button data-view="all">whole run</button>',
        '<button data-zoom="0.5">zoom in</button>',
        '<button data-zoom="2">zoom out</button>',
    ]
    axis = "ms since the first event" if layout.unit == "ms" else "record order (the history has no times)"
    return (
        f'<p class="controls">{"".join(buttons)} <span class="aside">time axis: {axis}; '
        "wheel zooms, drag pans, hover a bar for the whole operation</span></p>"
    )


def _svg(layout: Layout, prefix_rank: dict[int, int], dim_others: bool, prefix: Iterable[int]) -> str:
    height = TOP + len(layout.lanes) * LANE + 8
    right = LEFT + PLOT
    lo, hi = layout.view
    first_fault = layout.bands[0] if layout.bands else None
    attrs = {
        "id": "timeline",
        "width": right + 1,
        "height": height,
        "data-left": LEFT,
        "data-plot": PLOT,
        "data-top": TOP,
        "data-start": _n(layout.start),
        "data-stop": _n(layout.stop),
        "data-v0": _n(lo),
        "data-v1": _n(hi),
        "data-focus": f"{_n(lo)},{_n(hi)}",
        "data-unit": layout.unit,
        "data-char": CHAR,
        "data-min-bar": MIN_BAR,
    }
    if first_fault is not None:
        attrs["data-fault"] = ",".join(_n(v) for v in _fault_view(layout, first_fault))
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" '
        + " ".join(f'{k}="{_e(str(v))}"' for k, v in attrs.items())
        + ">",
        '<defs><linearGradient id="fade"><stop offset="0" stop-color="#ffb86b"/>'
        '<stop offset="1" stop-color="#ffb86b" stop-opacity="0.08"/></linearGradient>'
        f'<clipPath id="plot"><rect x="{LEFT}" y="0" width="{PLOT}" height="{height}"/></clipPath></defs>',
        f'<rect class="lanes-bg" x="{LEFT}" y="0" width="{PLOT}" height="{height}"/>',
    ]
    out += _overview(layout)
    out.append(_axis(layout, height))
    out.append('<g clip-path="url(#plot)" id="lanes">')
    for k in range(len(layout.lanes)):
        y = TOP + k * LANE + LANE - 3
        out.append(f'<line x1="{LEFT}" x2="{right}" y1="{y}" y2="{y}" stroke="#eee"/>')
    for b in layout.bands:
        out.append(_band(layout, b, height))
    prefix_ids = set(prefix)
    for c in layout.calls:
        out.append(
            _bar(
                layout, c, prefix_rank, dim_others and c.id not in layout.involved and c.id not in prefix_ids
            )
        )
    out.append("</g>")
    out.append(f'<rect class="names-bg" x="0" y="{TOP - 6}" width="{LEFT - 4}" height="{height - TOP + 6}"/>')
    for k, processes in enumerate(layout.lanes):
        names = " · ".join(f"p{p}" for p in processes)
        shown = names if len(names) * CHAR <= LEFT - 12 else _fit_names(processes)
        out.append(
            f'<text class="lane-name" x="6" y="{TOP + k * LANE + BAR - 2}">{_e(shown)}'
            f"<title>{_e('processes ' + ', '.join(str(p) for p in processes))}</title></text>"
        )
    out.append("</svg>")
    return "\n".join(out)


def _axis(layout: Layout, height: int) -> str:
    """Ticks at a round step (1, 2 or 5 times a power of ten) across the view, in the axis' unit."""
    lo, hi = layout.view
    step = _nice_step(hi - lo)
    digits = max(0, -math.floor(math.log10(step)))
    suffix = " ms" if layout.unit == "ms" else ""
    out = ['<g class="axis" id="axis">']
    k = math.ceil(lo / step)
    while k * step <= hi:
        t = k * step
        px = layout.x(t)
        out.append(
            f'<line x1="{px:.1f}" x2="{px:.1f}" y1="{TOP - 22}" y2="{height}"/>'
            f'<text x="{px + 2:.1f}" y="{TOP - 24}">{t:.{digits}f}{suffix}</text>'
        )
        k += 1
    out.append("</g>")
    return "".join(out)


def _nice_step(span: float) -> float:
    raw = span / 8
    power = 10 ** math.floor(math.log10(raw))
    return next(m * power for m in (1, 2, 5, 10) if m * power >= raw)


def _fit_names(processes: list[Any]) -> str:
    shown: list[str] = []
    for p in processes:
        more = f" +{len(processes) - len(shown) - 1}"
        if len(" · ".join([*shown, f"p{p}"]) + more) * CHAR > LEFT - 12:
            break
        shown.append(f"p{p}")
    return " · ".join(shown) + f" +{len(processes) - len(shown)}"


def _fault_view(layout: Layout, b: Band) -> tuple[float, float]:
    span = max(b.t1 - b.t0, (layout.stop - layout.start) / 50)
    return b.t0 - span * 0.5, b.t0 + span * 1.5


def _overview(layout: Layout) -> list[str]:
    """The whole run in a strip: faults, the violation, and the view's place in it."""
    whole = (layout.stop - layout.start) or 1.0
    y, h = 6, 12

    def at(t: float) -> float:
        return LEFT + (t - layout.start) / whole * PLOT

    out = [f'<g id="overview"><rect class="overview" x="{LEFT}" y="{y}" width="{PLOT}" height="{h}"/>']
    for b in layout.bands:
        out.append(
            f'<rect x="{_n(at(b.t0))}" y="{y}" width="{_n(max(1.5, at(b.t1) - at(b.t0)))}" height="{h}" '
            'fill="#bf8700" fill-opacity="0.5"/>'
        )
    for c in layout.calls:
        if c.id in layout.involved:
            out.append(
                f'<rect class="mark" x="{_n(at(layout.t(c.start)))}" y="{y}" width="2" height="{h}" fill="#cf222e"/>'
            )
    lo, hi = layout.view
    out.append(
        f'<rect class="window" id="window" x="{_n(at(lo))}" y="{y - 2}" '
        f'width="{_n(max(2, at(hi) - at(lo)))}" height="{h + 4}"/></g>'
    )
    return out


def _band(layout: Layout, b: Band, height: int) -> str:
    x0, x1 = layout.x(b.t0), layout.x(b.t1)
    tip = f"<title>nemesis {_e(b.detail)}</title>"
    if b.t1 == b.t0:
        return (
            f'<line class="nemesis" data-t0="{_n(b.t0)}" x1="{_n(x0)}" x2="{_n(x0)}" y1="{TOP - 16}" '
            f'y2="{height}">{tip}</line>'
        )
    return (
        f'<rect class="band" data-t0="{_n(b.t0)}" data-t1="{_n(b.t1)}" x="{_n(x0)}" y="{TOP - 16}" '
        f'width="{_n(max(MIN_BAR, x1 - x0))}" height="{height - TOP + 16}">{tip}</rect>'
        + _label(b.t0, b.t1, b.name, b.name, x0, x1, TOP - 5, "band-label")
    )


def _bar(layout: Layout, c: Call, prefix_rank: dict[int, int], dim: bool) -> str:
    t0 = layout.t(c.start)
    t1 = layout.t(c.end) if c.end is not None else layout.ends[c.id]
    x0, x1 = layout.x(t0), layout.x(t1)
    y = TOP + layout.lane_of[c.process] * LANE
    classes = [c.status]
    if c.id in layout.involved:
        classes.append("involved")
    elif c.id in prefix_rank:
        classes.append("prefix")
    if dim:
        classes.append("dim")
    took = layout.t(c.end) - t0 if c.end is not None else None
    tip = (
        f"{c.describe(FULL)}\n{c.status}; call at {_when(layout, t0)}"
        + (f", took {_span(layout, took)}" if took is not None else ", never returned")
        + (f"\nline {c.invoke.line}" if c.invoke.line is not None else f"\nrecord {c.invoke.index}")
        + (f"\nlinearized #{prefix_rank[c.id]}" if c.id in prefix_rank else "")
        + ("\ninvolved in the violation" if c.id in layout.involved else "")
    )
    full = f"{c.f} {_value_text(c)}".strip()
    short = c.f
    if c.id in prefix_rank:
        full, short = f"#{prefix_rank[c.id]} {full}", f"#{prefix_rank[c.id]}"
    cls = " ".join(classes)
    wide = INVOLVED_BAR if c.id in layout.involved else MIN_BAR
    if c.id in layout.involved:  # named beside its bar, whatever the zoom
        right = max(x1, x0 + wide)
        label = (
            f'<text class="involved-label" data-t0="{_n(t0)}" data-t1="{_n(t1)}" data-full="{_e(full)}" '
            f'data-outside="1" x="{_n(right + 3)}" y="{y + BAR - 3}" pointer-events="none">{_e(full)}</text>'
        )
    else:
        label = _label(t0, t1, full, short, x0, x1, y + BAR - 3, "label" + (" dim" if dim else ""))
    return (
        f'<g class="op" data-id="{c.id}"><rect class="{cls}" data-t0="{_n(t0)}" data-t1="{_n(t1)}" '
        f'data-min="{wide}" x="{_n(x0)}" y="{y}" width="{_n(max(wide, x1 - x0))}" height="{BAR}" rx="3">'
        f"<title>{_e(tip)}</title></rect>{label}</g>"
    )


def _label(t0: float, t1: float, full: str, short: str, x0: float, x1: float, y: float, cls: str) -> str:
    """A label whole when it fits its bar, else its short form when that fits, else empty."""
    text = _fit(full, short, x1 - x0)
    return (
        f'<text class="{cls}" data-t0="{_n(t0)}" data-t1="{_n(t1)}" data-full="{_e(full)}" '
        f'data-short="{_e(short)}" x="{_n(x0 + 3)}" y="{_n(y)}" pointer-events="none">{_e(text)}</text>'
    )


def _fit(full: str, short: str, width: float) -> str:
    if len(full) * CHAR + 6 <= width:
        return full
    return short if len(short) * CHAR + 6 <= width else ""


def _when(layout: Layout, t: float) -> str:
    return f"{t:.3f} ms" if layout.unit == "ms" else f"record {t:.0f}"


def _span(layout: Layout, t: float) -> str:
    return f"{t:.3f} ms" if layout.unit == "ms" else f"{t:.0f} records"


def _violation_list(violations: Sequence[Violation], layout: Layout) -> str:
    """Each violation, with a click that shows its operations."""
    items = []
    for v in violations[:20]:
        shown = [c for c in v.calls if c.process in layout.lane_of]
        view = ""
        if shown:
            lo = min(layout.t(c.start) for c in shown)
            hi = max(
                layout.t(c.end) if c.end is not None else layout.ends.get(c.id, layout.stop) for c in shown
            )
            pad = max(hi - lo, 1e-3) * 0.1
            view = f' data-view-range="{_n(lo - pad)},{_n(hi + pad)}"'
        items.append(f'<li class="violation"{view}>{_e(str(v))}</li>')
    more = f"<li>… and {len(violations) - 20} more</li>" if len(violations) > 20 else ""
    return f'<ul class="violations">{"".join(items)}{more}</ul>'


def _value_text(c: Call) -> str:
    v = "" if c.value is None else show(c.value, FULL)
    if c.status == "ok" and c.output is not None and c.output != c.value:
        return f"{v} → {show(c.output, FULL)}".strip()
    return v


def _prefix_table(p: PartitionResult) -> str:
    rows = [
        "<h2>Longest linearizable prefix" + ("" if p.key is None else f" of key {_e(repr(p.key))}") + "</h2>",
        "<table><tr><th>#</th><th>operation</th><th>line</th><th>state after</th></tr>",
    ]
    for k, (c, s) in enumerate(zip(p.linearization, p.states, strict=True), 1):
        rows.append(
            f"<tr><td>{k}</td><td>{_e(c.describe())}</td><td>{c.invoke.line or ''}</td><td>{_e(s)}</td></tr>"
        )
    if p.culprit is not None:
        rows.append(
            f'<tr class="culprit-row"><td>✗</td><td><b>{_e(p.culprit.describe())}</b></td>'
            f"<td>{p.culprit.invoke.line or ''}</td><td>cannot be linearized here or later</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)


def _n(v: float) -> str:
    return f"{v:.6g}" if abs(v) >= 1e6 else f"{v:.3f}".rstrip("0").rstrip(".")


def _e(text: str) -> str:
    return html.escape(text, quote=True)
