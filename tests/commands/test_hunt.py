"""`contend hunt`: a row per known-bad implementation as it finishes, --json, the budget, bad input."""

from __future__ import annotations

import json

import fastjsonschema

from contend.ci.document import schema
from contend.cli import main


def test_hunt_prints_each_row_and_writes_its_json(tmp_path, capsys):
    path = tmp_path / "hunt.json"
    argv = ["hunt", "--only", "exists_then_set", "--runs", "2", "--max-examples", "300", "--no-shrink"]
    assert main([*argv, "--json", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "exists_then_set caught 2/2" in out and "caught in every run" in out
    doc = json.loads(path.read_text())
    fastjsonschema.compile(schema("hunt"))(doc)
    (row,) = doc["implementations"]
    assert (doc["verdict"], doc["exit_code"], row["caught"], row["missed"]) == ("caught", 0, 2, 0)


def test_a_hunt_past_its_budget_is_inconclusive_and_says_what_was_left(tmp_path, capsys):
    path = tmp_path / "hunt.json"
    code = main(
        ["hunt", "--only", "naive", "--only", "exists_then_set", "--budget", "0.001", "--json", str(path)]
    )
    assert code == 3
    out = " ".join(capsys.readouterr().out.split())
    assert "not run: budget" in out and "raise --budget" in out
    doc = json.loads(path.read_text())
    fastjsonschema.compile(schema("hunt"))(doc)
    assert doc["verdict"] == "inconclusive" and doc["not_hunted"] == ["exists_then_set"]


def test_hunt_refuses_a_correct_or_unknown_implementation(capsys):
    assert main(["hunt", "--only", "lua"]) == 2
    assert "lua is not known-bad" in capsys.readouterr().err
    assert main(["hunt", "--only", "nosuch"]) == 2
    assert "no implementation called 'nosuch'" in capsys.readouterr().err
