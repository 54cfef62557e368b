"""The HTML timeline: verdict, lanes, the culprit and the linearizable prefix, nemesis marks, escaping."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from contend.history.checker import check_history
from contend.history.invariants import Violation
from contend.history.records import Record
from contend.history.timeline import render_timeline, write_timeline
from contend.models.cas_register import CasRegisterModel

NS = "{http://www.w3.org/2000/svg}"
DATA = Path(__file__).parent.parent / "data"


def register_history(read_value):
    """p0 writes 1, then p1 reads `read_value`; a nemesis event in between."""
    rows = [
        (0, "invoke", "write", 1),
        (0, "ok", "write", 1),
        ("nemesis", "info", "start", "pause <server>"),
        (1, "invoke", "read", None),
        (1, "ok", "read", read_value),
    ]
    return [Record(p, t, f, None, v, i * 10, i, line=i + 1) for i, (p, t, f, v) in enumerate(rows)]


def test_a_linearizable_history_has_no_culprit():
    page = render_timeline(check_history(register_history(1), CasRegisterModel()), title="ok run")
    assert '<p class="verdict pass">' in page
    svg = svg_of(page)
    assert not rects(svg, "involved") and not rects(svg, "dim")
    assert page.count("<rect") >= 2  # one bar per operation


def test_the_culprit_and_the_prefix_are_drawn():
    page = render_timeline(check_history(register_history(2), CasRegisterModel()))
    assert '<p class="verdict fail">VIOLATION — not linearizable' in page
    culprit = re.search(r'class="ok involved"[^>]*><title>([^<]*)</title>', page)
    assert culprit is not None and "read" in culprit.group(1)
    assert 'class="ok prefix"' in page  # the write linearizes first
    assert 'class="band"' in page  # a fault that never stopped: a band to the end


def test_text_is_escaped(tmp_path):
    path = write_timeline(
        check_history(register_history(1), CasRegisterModel()), tmp_path / "t.html", title="<b>x</b>"
    )
    page = path.read_text()
    assert "<b>x</b>" not in page and "&lt;b&gt;x&lt;/b&gt;" in page
    assert "pause <server>" not in page


def test_html_for_a_long_history_shows_a_window(tmp_path):
    from contend.benchmarks.checker import cas_register_history, corrupt
    from contend.history.checker import check_history
    from contend.history.timeline import render_timeline
    from contend.models.cas_register import CasRegisterModel

    records = corrupt(cas_register_history(operations=2000), "read", lambda r: 99, 0.7)
    verdict = check_history(records, CasRegisterModel())
    page = render_timeline(verdict, max_calls=300)
    assert "Showing 300 of 2000 operations" in page
    assert page.count('class="ok involved"') == 1


# --------------------------------------------------------------------------- what a person sees first

LEFT, PLOT = 150, 1100


def long_run(processes=3, per_process=400):
    """A timed run of writes (1 ms apart, 0.4 ms each) with a client pause from 300 to 330 ms."""
    records = []
    for p in range(processes):
        for k in range(per_process):
            start = (k * 1_000_000) + p * 300_000
            records.append(Record(p, "invoke", "write", None, k, start))
            records.append(Record(p, "ok", "write", None, k, start + 400_000))
    records += [
        Record("nemesis", "info", "client-pause", None, "start: process 1 stopped", 300_200_000),
        Record("nemesis", "info", "client-pause", None, "stop: process 1 resumed", 330_100_000),
    ]
    records.sort(key=lambda r: r.time)
    for i, r in enumerate(records):
        r.index = i
    return records


def svg_of(page):
    svg = re.search(r"<svg.*</svg>", page, re.S)
    assert svg is not None
    return ET.fromstring(svg.group())


def rects(svg, cls):
    return [e for e in svg.iter(f"{NS}rect") if cls in e.get("class", "").split()]


def test_a_violation_opens_the_page_highlighted_in_the_first_screen_with_its_fault():
    verdict = check_history(long_run(), CasRegisterModel())
    by_start = sorted(verdict.calls, key=lambda c: c.start)
    two = (
        next(c for c in by_start if c.process == 0 and c.start > 310e6),
        next(c for c in by_start if c.process == 2 and c.start > 311e6),
    )
    violation = Violation("critical sections", "two holders at once", two)
    page = render_timeline(verdict, title="contend stress token", violations=[violation])
    # The title and the verdict line say the same thing; the checker's own verdict is kept apart.
    assert "<title>contend stress token · VIOLATION</title>" in page
    assert '<p class="verdict fail">VIOLATION — critical sections: two holders at once</p>' in page
    assert '<p class="aside">linearizability: linearizable' in page
    svg = svg_of(page)
    assert int(svg.get("width")) <= LEFT + PLOT + 1  # a first screen, not a 20,000 px page
    involved = rects(svg, "involved")
    assert len(involved) == 2
    for r in involved:  # both in view at the first zoom, and named beside their bars
        assert LEFT <= float(r.get("x")) <= LEFT + PLOT - 10
    assert page.count('class="involved-label"') == 2
    # Everything else is dimmed; the fault that overlaps it is a band in view over the lanes.
    ok = [r for r in rects(svg, "ok") if "involved" not in r.get("class")]
    assert ok and all("dim" in r.get("class") for r in ok)
    (band,) = rects(svg, "band")
    assert LEFT <= float(band.get("x")) < LEFT + PLOT and float(band.get("width")) > 20
    # A time axis in ms across the view; lane names in their own column, outside the zoomed lanes.
    ticks = [t.text for t in svg.find(f"{NS}g[@id='axis']").iter(f"{NS}text")]
    assert len(ticks) >= 4 and all(t.endswith(" ms") for t in ticks)
    lanes = svg.find(f"{NS}g[@id='lanes']")
    assert lanes.get("clip-path") == "url(#plot)"
    names = [t for t in svg.iter(f"{NS}text") if t.get("class") == "lane-name"]
    assert [n.text for n in names] == ["p0", "p1", "p2"] and all(float(n.get("x")) < LEFT for n in names)
    assert "<script>" in page and 'data-view="focus"' in page  # zoom and pan, and back to the violation


def test_labels_are_whole_or_left_out_never_cut_and_hover_shows_everything():
    verdict = check_history(long_run(per_process=200), CasRegisterModel())
    svg = svg_of(render_timeline(verdict))
    labels = [t for t in svg.iter(f"{NS}text") if "label" in (t.get("class") or "").split()]
    assert labels
    drawn = [t.text for t in labels if t.text]
    assert drawn, "at the first zoom a typical operation's label fits"
    assert all(
        text in (t.get("data-full"), t.get("data-short"))
        for t, text in ((t, t.text) for t in labels if t.text)
    )
    assert not any("…" in (t.text or "") for t in svg.iter(f"{NS}text"))
    tips = [t.text for t in svg.iter(f"{NS}title")]
    assert any("write(" in tip and "took 0.400 ms" in tip for tip in tips)


def test_a_jepsen_log_packs_its_processes_into_lanes_on_a_record_axis():
    from contend.history.formats import read_history

    records = read_history(DATA / "etcd_002.log")
    page = render_timeline(check_history(records, CasRegisterModel()), title="etcd_002.log")
    svg = svg_of(page)
    bars = [
        r for r in svg.iter(f"{NS}rect") if (r.get("class") or "").split()[:1] in (["ok"], ["fail"], ["info"])
    ]
    lanes = {round((float(r.get("y")) - 64) / 22) for r in bars}
    names = [t for t in svg.iter(f"{NS}text") if t.get("class") == "lane-name"]
    assert len(names) == len(lanes) < 10  # 23 Jepsen processes, 5 at a time: no empty lane
    assert "record order (the history has no times)" in page
    assert not any("…" in (t.text or "") for t in svg.iter(f"{NS}text"))
    assert sum(1 for t in svg.iter(f"{NS}text") if "label" in (t.get("class") or "") and t.text) >= 5
