"""The counts README, docs and report give of the scoreboard (rows, distributions, findings, whose
promise) are the board's own (contend.scoreboard.render.findings_count), and the committed
report is the one docs/scoreboard-results.md copies."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from contend.scoreboard.expected import FINDINGS, LIBRARY
from contend.scoreboard.render import findings_count

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "docs" / "commands" / "scoreboard.md"]
ROWS = re.compile(r"(\d+) rows of (\d+) Python distributions")
FOUND = re.compile(
    r"(\d+) findings\s+recorded \((\d+) break the library's own promise, (\d+) only contend's protocol\)"
)


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_the_pages_count_what_the_board_holds(page):
    text = page.read_text()
    counts = findings_count()
    rows = ROWS.findall(text)
    found = FOUND.findall(" ".join(text.split()))
    assert rows and found, f"{page.name} gives no counts of the board"
    assert {(int(a), int(b)) for a, b in rows} == {(counts["rows"], counts["distributions"])}
    assert {tuple(map(int, f)) for f in found} == {
        (counts["findings"], counts["library_promise"], counts["contend_protocol_only"])
    }


def test_the_committed_report_counts_every_row_and_finding():
    report = (ROOT / "reports" / "scoreboard" / "report.md").read_text()
    counts = findings_count()
    line = re.search(r"(\d+) rows, (\d+) distributions; (\d+) findings recorded", report)
    assert line is not None, "the report gives no counts"
    assert tuple(map(int, line.groups())) == (counts["rows"], counts["distributions"], counts["findings"])
    rows = re.findall(r"^\| [^|]+ \| [^|]+ \| [^|]+ \|", report.split("\n## ")[0], flags=re.M)
    assert len(rows) - 1 == counts["rows"]  # the header (its rule has no spaces)


def test_every_finding_says_whose_promise_it_breaks():
    for finding in FINDINGS:
        assert finding.promise is not None, f"{finding.anchor}: whose promise?"
        assert finding.promise.text and finding.promise.link
        if finding.promise.whose == LIBRARY:
            assert finding.promise.link.startswith("https://"), finding.anchor
        else:
            assert finding.promise.link.startswith("docs/protocol.md"), finding.anchor
        assert all(ref.startswith("https://") for ref in finding.refs), finding.anchor
        assert finding.tracker_status != "related" or finding.refs, f"{finding.anchor}: related to what?"
