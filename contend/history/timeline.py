"""A self-contained HTML timeline of a checked history, openable offline.

One lane per process, each operation a bar from its call to its return (an
info operation runs on to the right edge: it may take effect any time after its
call); nemesis events are vertical marks across every lane. When the history
is not linearizable the operation that cannot be linearized is drawn in red and
the longest linearizable prefix is numbered in its linearization order. The
x axis is the order of events, not wall time, so short operations stay
visible; hovering a bar shows its times.
"""

from __future__ import annotations

import html
from pathlib import Path
from typing import Any

from contend.history.records import Call, Record, show
from contend.history.verdict import Linearizability, PartitionResult, Verdict

LANE = 24
BAR = 16
LEFT = 110
TOP = 40
MAX_CALLS = 3000

_CSS = """
body { font: 13px/1.4 system-ui, sans-serif; margin: 16px; color: #222; }
h1 { font-size: 18px; margin: 0 0 4px; }
.verdict { font-weight: bold; }
.linearizable { color: #1a7f37; } .not-linearizable { color: #cf222e; } .unknown { color: #9a6700; }
pre { background: #f6f8fa; padding: 8px; overflow-x: auto; }
.scroll { overflow-x: auto; border: 1px solid #d0d7de; }
svg text { font: 11px system-ui, sans-serif; }
rect.ok { fill: #8cb4ff; } rect.fail { fill: #d0d7de; } rect.info { fill: url(#fade); }
rect.prefix { fill: #7ee2a8; } rect.culprit { fill: #ff5a5a; stroke: #8b0000; stroke-width: 2; }
line.nemesis { stroke: #bf8700; stroke-dasharray: 4 3; }
table { border-collapse: collapse; margin-top: 8px; }
td, th { border: 1px solid #d0d7de; padding: 2px 6px; text-align: left; }
.legend span { display: inline-block; margin-right: 14px; }
.swatch { display: inline-block; width: 14px; height: 10px; margin-right: 4px; vertical-align: middle; }
"""


def render_timeline(
    verdict: Verdict, *, title: str = "contend history check", max_calls: int = MAX_CALLS
) -> str:
    """The HTML page, as a string."""
    failing = next((p for p in verdict.partitions if p.outcome is Linearizability.NOT_LINEARIZABLE), None)
    focus = failing or (verdict.partitions[0] if verdict.partitions else None)
    calls, note = _window(verdict.calls, focus.culprit if focus else None, max_calls)
    nemesis = verdict.nemesis
    if calls and note:
        lo, hi = calls[0].start, max(c.end if c.end is not None else c.start for c in calls)
        nemesis = [r for r in nemesis if r.time is None or lo <= r.time <= hi]
    prefix_rank: dict[int, int] = {}
    culprit_id = None
    if focus is not None:
        prefix_rank = {c.id: k + 1 for k, c in enumerate(focus.linearization)}
        culprit_id = focus.culprit.id if focus.culprit else None

    svg = _svg(calls, nemesis, prefix_rank, culprit_id, verdict)
    css_class = verdict.outcome.value.replace(" ", "-")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_e(title)}</h1>",
        f'<p class="verdict {css_class}">{_e(verdict.summary())}</p>',
    ]
    if verdict.partitions:
        parts.append("<pre>" + _e("\n".join(p.explain() for p in verdict.partitions[:20])) + "</pre>")
    if note:
        parts.append(f"<p>{_e(note)}</p>")
    parts.append(
        '<p class="legend">'
        '<span><i class="swatch" style="background:#8cb4ff"></i>ok</span>'
        '<span><i class="swatch" style="background:#d0d7de"></i>fail (no effect)</span>'
        '<span><i class="swatch" style="background:linear-gradient(90deg,#ffb86b,#fff)"></i>'
        "info (may take effect any time after its call)</span>"
        '<span><i class="swatch" style="background:#7ee2a8"></i>longest linearizable prefix (#order)</span>'
        '<span><i class="swatch" style="background:#ff5a5a"></i>cannot be linearized</span>'
        '<span><i class="swatch" style="border-left:2px dashed #bf8700"></i>nemesis</span></p>'
    )
    parts.append(f'<div class="scroll">{svg}</div>')
    if focus is not None and focus.outcome is Linearizability.NOT_LINEARIZABLE:
        parts.append(_prefix_table(focus))
    parts.append("</body></html>")
    return "\n".join(parts)


def write_timeline(verdict: Verdict, path: str | Path, *, title: str | None = None) -> Path:
    """Write the page to `path`; returns the path."""
    p = Path(path)
    p.write_text(render_timeline(verdict, title=title or "contend history check"), encoding="utf-8")
    return p


def _window(calls: list[Call], culprit: Call | None, max_calls: int) -> tuple[list[Call], str]:
    if len(calls) <= max_calls:
        return calls, ""
    ordered = sorted(calls, key=lambda c: (c.start, c.id))
    centre = 0
    if culprit is not None:
        centre = next((k for k, c in enumerate(ordered) if c.id == culprit.id), 0)
    lo = max(0, min(centre - max_calls // 2, len(ordered) - max_calls))
    shown = ordered[lo : lo + max_calls]
    return shown, (
        f"Showing {len(shown)} of {len(calls)} operations (by call time, "
        f"{'around the one that cannot be linearized' if culprit else 'from the start'})."
    )


def _lane_key(p: Any) -> tuple[int, Any]:
    return (0, p) if isinstance(p, int) else (1, str(p))


def _svg(
    calls: list[Call],
    nemesis: list[Record],
    prefix_rank: dict[int, int],
    culprit_id: int | None,
    verdict: Verdict,
) -> str:
    times: set[int] = set()
    for c in calls:
        times.add(c.start)
        if c.end is not None:
            times.add(c.end)
    nemesis_times: list[int | None] = [r.time for r in nemesis]
    times.update(t for t in nemesis_times if t is not None)
    ordered = sorted(times)
    rank = {t: k for k, t in enumerate(ordered)}
    unit = max(6, min(40, 1600 // max(1, len(ordered))))
    right = LEFT + (len(ordered) + 2) * unit
    processes = sorted({c.process for c in calls}, key=_lane_key)
    lane = {p: k for k, p in enumerate(processes)}
    height = TOP + (len(processes) + 1) * LANE
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{right + 20}" height="{height}">',
        '<defs><linearGradient id="fade"><stop offset="0" stop-color="#ffb86b"/>'
        '<stop offset="1" stop-color="#ffb86b" stop-opacity="0.08"/></linearGradient></defs>',
    ]
    for p, k in lane.items():
        y = TOP + k * LANE
        out.append(f'<text x="4" y="{y + BAR - 3}">process {_e(str(p))}</text>')
        out.append(f'<line x1="{LEFT}" x2="{right}" y1="{y + LANE - 3}" y2="{y + LANE - 3}" stroke="#eee"/>')
    for r, t in zip(nemesis, nemesis_times, strict=True):
        if t is None:
            continue
        x = LEFT + rank[t] * unit + unit / 2
        label = f"{r.f} {'' if r.value is None else show(r.value)}".strip()
        out.append(
            f'<line class="nemesis" x1="{x}" x2="{x}" y1="{TOP - 14}" y2="{height}">'
            f"<title>nemesis {_e(label)} (line {r.line})</title></line>"
        )
        out.append(f'<text x="{x + 2}" y="{TOP - 18}" fill="#bf8700">{_e(_clip(label, 24))}</text>')
    culprit_xy: tuple[float, float] | None = None
    for c in calls:
        x0 = LEFT + rank[c.start] * unit + 1
        x1 = right if c.end is None else LEFT + rank[c.end] * unit + unit - 1
        y = TOP + lane[c.process] * LANE
        cls = c.status
        if c.id == culprit_id:
            cls = "culprit"
            culprit_xy = (x0, y)
        elif c.id in prefix_rank:
            cls = "prefix"
        tip = (
            f"{c.describe()}\n{c.status}; call {c.start}"
            + (f", return {c.end}" if c.end is not None else ", never returned")
            + (f"\nline {c.invoke.line}" if c.invoke.line is not None else f"\nrecord {c.invoke.index}")
            + (f"\nlinearized #{prefix_rank[c.id]}" if c.id in prefix_rank else "")
        )
        out.append(
            f'<g><rect class="{cls}" x="{x0}" y="{y}" width="{max(2, x1 - x0)}" height="{BAR}" rx="3">'
            f"<title>{_e(tip)}</title></rect>"
        )
        label = _clip(f"{c.f} {_value_text(c)}", max(0, int((x1 - x0) / 6)))
        if c.id in prefix_rank:
            label = _clip(f"#{prefix_rank[c.id]} {label}", max(0, int((x1 - x0) / 6)))
        if label:
            out.append(f'<text x="{x0 + 3}" y="{y + BAR - 4}" pointer-events="none">{_e(label)}</text>')
        out.append("</g>")
    if culprit_xy is not None:
        cx, cy = culprit_xy
        out.append(
            f'<text x="{cx}" y="{cy - 2}" fill="#8b0000" font-weight="bold" data-illegal="1">'
            "✗ cannot be linearized</text>"
        )
    out.append("</svg>")
    return "\n".join(out)


def _value_text(c: Call) -> str:
    v = "" if c.value is None else show(c.value, 16)
    if c.status == "ok" and c.output is not None and c.output != c.value:
        return f"{v} → {show(c.output, 16)}".strip()
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


def _clip(text: str, limit: int) -> str:
    if limit <= 0:
        return ""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def _e(text: str) -> str:
    return html.escape(text, quote=True)
