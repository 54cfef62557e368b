"""The timeline drawn: the SVG of lanes, bars, fault bands, axis and overview strip, the controls
above it, and the helpers that write numbers and text into the page. The page's script
(timeline.js) zooms and pans what is drawn here, reading the data- attributes."""

from __future__ import annotations

import html
import math
from collections.abc import Iterable
from typing import Any

from contend.history.records import Call, show
from contend.history.timeline_layout import (
    BAR,
    CHAR,
    FULL,
    INVOLVED_BAR,
    LANE,
    LEFT,
    MIN_BAR,
    PLOT,
    TOP,
    Band,
    Layout,
)


def controls(layout: Layout, violation: bool) -> str:
    """The buttons above the drawing, and a line on the time axis and how to move it."""
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


def svg(layout: Layout, prefix_rank: dict[int, int], dim_others: bool, prefix: Iterable[int]) -> str:
    """The drawing: overview, axis, fault bands, a bar per call (the uninvolved dimmed when
    `dim_others`, the prefix's numbered), and the lane names."""
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
        "data-start": num(layout.start),
        "data-stop": num(layout.stop),
        "data-v0": num(lo),
        "data-v1": num(hi),
        "data-focus": f"{num(lo)},{num(hi)}",
        "data-unit": layout.unit,
        "data-char": CHAR,
        "data-min-bar": MIN_BAR,
    }
    if first_fault is not None:
        attrs["data-fault"] = ",".join(num(v) for v in _fault_view(layout, first_fault))
    out = [
        '<svg xmlns="http://www.w3.org/2000/svg" '
        + " ".join(f'{k}="{esc(str(v))}"' for k, v in attrs.items())
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
        out.append(
            f'<text class="lane-name" x="6" y="{TOP + k * LANE + BAR - 2}">{esc(lane_name(processes))}'
            f"<title>{esc(_lane_tip(processes))}</title></text>"
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


#: Processes that are no client's, by the name the rest of the output gives them.
_NAMED = {"final": "final read", "nemesis": "nemesis"}


def lane_name(processes: list[Any]) -> str:
    """A lane's name as the verdict and the nemesis lines name its processes: 'process 2', or
    'process 0 · 3 · 6' for a worker that went on as new processes after lost replies, and
    'final read' for the harness's read at the end; cut to fit the names' column."""
    names = [str(p) for p in processes if not isinstance(p, str)]
    names[:1] = [f"process {n}" for n in names[:1]]
    names += [str(_NAMED.get(p, p)) for p in processes if isinstance(p, str)]
    room = (LEFT - 12) / CHAR
    for shown in range(len(names), 0, -1):  # as many as fit, and how many more there are
        name = " · ".join(names[:shown]) + (f" +{len(names) - shown}" if shown < len(names) else "")
        if len(name) <= room:
            return name
    return f"{names[0]} +{len(names) - 1}" if len(names) > 1 else names[0]


def _lane_tip(processes: list[Any]) -> str:
    clients = [str(p) for p in processes if not isinstance(p, str)]
    others = [str(_NAMED.get(p, p)) for p in processes if isinstance(p, str)]
    tip = f"process{'es' if len(clients) > 1 else ''} {', '.join(clients)}" if clients else ""
    if len(clients) > 1:
        tip += " (one after another: a process whose reply was lost goes on as a new one)"
    return "; ".join([t for t in (tip, *others) if t])


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
            f'<rect x="{num(at(b.t0))}" y="{y}" width="{num(max(1.5, at(b.t1) - at(b.t0)))}" height="{h}" '
            'fill="#bf8700" fill-opacity="0.5"/>'
        )
    for c in layout.calls:
        if c.id in layout.involved:
            out.append(
                f'<rect class="mark" x="{num(at(layout.t(c.start)))}" y="{y}" width="2" height="{h}" fill="#cf222e"/>'
            )
    lo, hi = layout.view
    out.append(
        f'<rect class="window" id="window" x="{num(at(lo))}" y="{y - 2}" '
        f'width="{num(max(2, at(hi) - at(lo)))}" height="{h + 4}"/></g>'
    )
    return out


def _band(layout: Layout, b: Band, height: int) -> str:
    x0, x1 = layout.x(b.t0), layout.x(b.t1)
    tip = f"<title>nemesis {esc(b.detail)}</title>"
    if b.t1 == b.t0:
        return (
            f'<line class="nemesis" data-t0="{num(b.t0)}" x1="{num(x0)}" x2="{num(x0)}" y1="{TOP - 16}" '
            f'y2="{height}">{tip}</line>'
        )
    return (
        f'<rect class="band" data-t0="{num(b.t0)}" data-t1="{num(b.t1)}" x="{num(x0)}" y="{TOP - 16}" '
        f'width="{num(max(MIN_BAR, x1 - x0))}" height="{height - TOP + 16}">{tip}</rect>'
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
    if c.id in layout.involved:  # named beside its bar, whatever the zoom: after it, or before it
        left, anchor = involved_label_x(x0, x1, full)  # where after it would leave the drawing
        label = (
            f'<text class="involved-label" data-t0="{num(t0)}" data-t1="{num(t1)}" data-full="{esc(full)}" '
            f'data-outside="1" x="{num(left)}" y="{y + BAR - 3}" text-anchor="{anchor}" '
            f'pointer-events="none">{esc(full)}</text>'
        )
    else:
        label = _label(t0, t1, full, short, x0, x1, y + BAR - 3, "label" + (" dim" if dim else ""))
    return (
        f'<g class="op" data-id="{c.id}"><rect class="{cls}" data-t0="{num(t0)}" data-t1="{num(t1)}" '
        f'data-min="{wide}" x="{num(x0)}" y="{y}" width="{num(max(wide, x1 - x0))}" height="{BAR}" rx="3">'
        f"<title>{esc(tip)}</title></rect>{label}</g>"
    )


def involved_label_x(x0: float, x1: float, text: str) -> tuple[float, str]:
    """(x, text-anchor) of an involved bar's label: just after the bar, or just before it when
    after it would run past the drawing's right edge (where it was cut off) and before it fits."""
    after = max(x1, x0 + INVOLVED_BAR) + 3
    width = len(text) * CHAR
    if after + width > LEFT + PLOT and x0 - 3 - width >= LEFT:
        return x0 - 3, "end"
    return after, "start"


def _label(t0: float, t1: float, full: str, short: str, x0: float, x1: float, y: float, cls: str) -> str:
    """A label whole when it fits its bar, else its short form when that fits, else empty."""
    text = _fit(full, short, x1 - x0)
    return (
        f'<text class="{cls}" data-t0="{num(t0)}" data-t1="{num(t1)}" data-full="{esc(full)}" '
        f'data-short="{esc(short)}" x="{num(x0 + 3)}" y="{num(y)}" pointer-events="none">{esc(text)}</text>'
    )


def _fit(full: str, short: str, width: float) -> str:
    if len(full) * CHAR + 6 <= width:
        return full
    return short if len(short) * CHAR + 6 <= width else ""


def _when(layout: Layout, t: float) -> str:
    return f"{t:.3f} ms" if layout.unit == "ms" else f"record {t:.0f}"


def _span(layout: Layout, t: float) -> str:
    return f"{t:.3f} ms" if layout.unit == "ms" else f"{t:.0f} records"


def _value_text(c: Call) -> str:
    v = "" if c.value is None else show(c.value, FULL)
    if c.status == "ok" and c.output is not None and c.output != c.value:
        return f"{v} → {show(c.output, FULL)}".strip()
    return v


def num(v: float) -> str:
    """A number as the page writes it: short, without trailing zeros."""
    return f"{v:.6g}" if abs(v) >= 1e6 else f"{v:.3f}".rstrip("0").rstrip(".")


def esc(text: str) -> str:
    """Text escaped for HTML and its attributes."""
    return html.escape(text, quote=True)
