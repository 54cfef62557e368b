"""The HTML timeline: verdict, lanes, the culprit and the linearizable prefix, nemesis marks, escaping."""

from __future__ import annotations

import re

from contend.history.checker import check_history
from contend.history.records import Record
from contend.history.timeline import render_timeline, write_timeline
from contend.models.cas_register import CasRegisterModel


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
    assert '<p class="verdict linearizable">' in page
    assert 'class="culprit"' not in page
    assert page.count("<rect") >= 2  # one bar per operation


def test_the_culprit_and_the_prefix_are_drawn():
    page = render_timeline(check_history(register_history(2), CasRegisterModel()))
    assert '<p class="verdict not-linearizable">' in page
    culprit = re.search(r'class="culprit"[^>]*><title>([^<]*)</title>', page)
    assert culprit is not None and "read" in culprit.group(1)
    assert 'class="prefix"' in page  # the write linearizes first
    assert 'class="nemesis"' in page


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
    assert page.count('class="culprit"') == 1
