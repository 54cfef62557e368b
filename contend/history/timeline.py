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

Here is the page; contend.history.timeline_layout places the lanes, bars and view, and
contend.history.timeline_svg draws them.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from contend.history.invariants import Violation
from contend.history.timeline_layout import Layout, lay_out, violation_span, window
from contend.history.timeline_svg import controls, esc, num, svg
from contend.history.verdict import Linearizability, PartitionResult, Verdict

#: At most this many operations are drawn: a window of them around the violation (or the start).
MAX_CALLS = 3000

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
    focus = violation_span(list(violations[0].calls), verdict.calls) if violations else []
    focus_ids = [c.id for c in focus] if violations else ([culprit.id] if culprit else [])
    calls, note = window(verdict.calls, focus_ids, max_calls)
    prefix_rank = {c.id: k + 1 for k, c in enumerate(failing.linearization)} if failing else {}
    layout = lay_out(calls, verdict.nemesis, involved, focus_ids)
    word, css, line = _verdict_line(verdict, violations, headline)
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>{esc(title)} · {esc(word)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{esc(title)}</h1>",
        f'<p class="verdict {css}">{esc(line)}</p>',
    ]
    if violations or headline:
        parts.append(f'<p class="aside">linearizability: {esc(verdict.summary())}</p>')
    if violations:
        parts.append(_violation_list(violations, layout))
    if verdict.partitions:
        parts.append("<pre>" + esc("\n".join(p.explain() for p in verdict.partitions[:20])) + "</pre>")
    if note:
        parts.append(f"<p>{esc(note)}</p>")
    parts.append(_LEGEND)
    parts.append(controls(layout, bool(involved)))
    parts.append(svg(layout, prefix_rank, bool(involved), prefix_rank.keys()))
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


def _violation_list(violations: Sequence[Violation], layout: Layout) -> str:
    """Each violation, with a click that shows its operations."""
    items = []
    for v in violations[:20]:
        shown = [c for c in violation_span(list(v.calls), layout.calls) if c.process in layout.lane_of]
        view = ""
        if shown:
            lo = min(layout.t(c.start) for c in shown)
            hi = max(
                layout.t(c.end) if c.end is not None else layout.ends.get(c.id, layout.stop) for c in shown
            )
            pad = max(hi - lo, 1e-3) * 0.1
            view = f' data-view-range="{num(lo - pad)},{num(hi + pad)}"'
        items.append(f'<li class="violation"{view}>{esc(str(v))}</li>')
    more = f"<li>… and {len(violations) - 20} more</li>" if len(violations) > 20 else ""
    return f'<ul class="violations">{"".join(items)}{more}</ul>'


def _prefix_table(p: PartitionResult) -> str:
    rows = [
        "<h2>Longest linearizable prefix"
        + ("" if p.key is None else f" of key {esc(repr(p.key))}")
        + "</h2>",
        "<table><tr><th>#</th><th>operation</th><th>line</th><th>state after</th></tr>",
    ]
    for k, (c, s) in enumerate(zip(p.linearization, p.states, strict=True), 1):
        rows.append(
            f"<tr><td>{k}</td><td>{esc(c.describe())}</td><td>{c.invoke.line or ''}</td><td>{esc(s)}</td></tr>"
        )
    if p.culprit is not None:
        rows.append(
            f'<tr class="culprit-row"><td>✗</td><td><b>{esc(p.culprit.describe())}</b></td>'
            f"<td>{p.culprit.invoke.line or ''}</td><td>cannot be linearized here or later</td></tr>"
        )
    rows.append("</table>")
    return "\n".join(rows)
