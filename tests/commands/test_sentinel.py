"""`contend sentinel`: the budget, --json (the failover itself: tests/servers/test_sentinel.py)."""

from __future__ import annotations

import json

import fastjsonschema

from contend.ci.document import schema
from contend.cli import main


def test_sentinel_past_its_budget_measures_nothing_and_says_so(tmp_path, capsys):
    """The failover itself is measured in tests/servers/test_sentinel.py; here, the command's frame."""
    path = tmp_path / "sentinel.json"
    assert main(["sentinel", "--failovers", "2", "--budget", "0.000001", "--json", str(path)]) == 3
    assert "budget ran out after 0 of 2 failover(s)" in " ".join(capsys.readouterr().out.split())
    doc = json.loads(path.read_text())
    fastjsonschema.compile(schema("sentinel"))(doc)
    assert doc["verdict"] == "inconclusive" and doc["failovers"] == []
