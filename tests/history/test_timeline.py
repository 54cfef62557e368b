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
    assert [n.text for n in names] == ["process 0", "process 1", "process 2"]  # as the verdict names them
    assert all(float(n.get("x")) < LEFT for n in names)
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


# --------------------------------------------------------------------------- a stress run's picture


def two_holders_run():
    """A lock history as contend stress records it: process 0 takes the lock and is paused past
    its lease; process 1 takes it, writes and releases; process 0 resumes, writes and releases;
    the harness's final read. Many operations before, so the violation is a small part of the run."""
    rows = []
    for k in range(300):  # earlier rounds: 0 and 1 take turns, 1 ms each
        p, t = k % 2, k * 3_000_000
        rows += [(p, "invoke", "acquire", None, t), (p, "ok", "acquire", True, t + 400_000)]
        rows += [(p, "invoke", "incr", None, t + 500_000), (p, "ok", "incr", k + 1, t + 900_000)]
        rows += [(p, "invoke", "release", None, t + 1_000_000), (p, "ok", "release", None, t + 1_400_000)]
    t = 900_000_000
    rows += [
        (0, "invoke", "acquire", None, t),
        (0, "ok", "acquire", True, t + 400_000),
        (
            "nemesis",
            "info",
            "client-pause",
            "start: process 0 (pid 9) stopped, holding the lock",
            t + 500_000,
        ),
        (1, "invoke", "acquire", None, t + 301_000_000),
        (1, "ok", "acquire", True, t + 301_400_000),
        (1, "invoke", "incr", None, t + 301_500_000),
        (1, "ok", "incr", 301, t + 301_900_000),
        (1, "invoke", "release", None, t + 302_000_000),
        (1, "ok", "release", None, t + 302_400_000),
        ("nemesis", "info", "client-pause", "stop: process 0 (pid 9) resumed after 450 ms", t + 450_500_000),
        (0, "invoke", "incr", None, t + 450_600_000),
        (0, "ok", "incr", 302, t + 451_000_000),
        (0, "invoke", "release", None, t + 520_100_000),  # slow to let go: 70 ms after its write
        (0, "ok", "release", None, t + 520_500_000),
        ("final", "invoke", "read", None, t + 600_000_000),
        ("final", "ok", "read", 302, t + 600_400_000),
    ]
    records = [Record(p, kind, f, None, v, time) for p, kind, f, v, time in rows]
    for i, r in enumerate(records):
        r.index = i
    return records


def test_a_stress_runs_picture_names_its_lanes_labels_every_violating_bar_and_opens_on_all_of_it():
    """The lanes are named as the verdict names the processes (not 'p0 · pfinal'); every bar of
    the violation has its label inside the drawing (the last one's ran off its right edge); the
    first view holds the violation from the first acquire to both holders' releases."""
    from contend.history.models import history_check
    from contend.history.records import pair
    from contend.history.timeline_layout import CHAR

    records = two_holders_run()
    (mutex,) = history_check("mutex", pair(records).calls, lease_expiry=True, ttl_ms=300).models[:1]
    verdict = check_history(records, mutex)
    by = {(c.process, c.f, c.start): c for c in verdict.calls}
    t = 900_000_000
    two = (by[(0, "acquire", t)], by[(1, "acquire", t + 301_000_000)], by[(0, "incr", t + 450_600_000)])
    violation = Violation("critical sections", "process 1 acquired while process 0 held it", two)
    svg = svg_of(render_timeline(verdict, title="contend stress token", violations=[violation]))
    names = [t.text for t in svg.iter(f"{NS}text") if t.get("class") == "lane-name"]
    assert names == ["process 0", "process 1", "final read"], names
    ops = {int(g.get("data-id")): g for g in svg.iter(f"{NS}g") if g.get("class") == "op"}
    labels = [ops[c.id].find(f"{NS}text") for c in two]
    assert all(label is not None and label.get("class") == "involved-label" for label in labels)
    for label in labels:  # inside the drawing, whichever side of its bar
        x, width = float(label.get("x")), len(label.text) * CHAR
        lo, hi = (x - width, x) if label.get("text-anchor") == "end" else (x, x + width)
        assert lo >= LEFT and hi <= LEFT + PLOT, (label.text, lo, hi)
    v0, v1 = float(svg.get("data-v0")), float(svg.get("data-v1"))
    releases = [by[(1, "release", t + 302_000_000)], by[(0, "release", t + 520_100_000)]]
    origin = min(c.start for c in verdict.calls)
    for c in [*two, *releases]:
        assert v0 <= (c.start - origin) / 1e6 and (c.end - origin) / 1e6 <= v1, (c.describe(), v0, v1)


def test_an_involved_label_at_the_right_edge_goes_before_its_bar():
    """After its bar, a label at the drawing's right edge was cut off by the clip."""
    from contend.history.timeline_layout import CHAR
    from contend.history.timeline_svg import involved_label_x

    assert involved_label_x(LEFT + 100, LEFT + 108, "incr → 302") == (LEFT + 111, "start")
    x, anchor = involved_label_x(LEFT + PLOT - 20, LEFT + PLOT - 12, "incr → 302")
    assert anchor == "end" and x == LEFT + PLOT - 23 and x - len("incr → 302") * CHAR >= LEFT
