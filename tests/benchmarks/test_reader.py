"""The reader benchmark: its generated Jepsen history reads the same from EDN and from JSONL."""

from __future__ import annotations

from contend.benchmarks.reader import edn_lines, jepsen_history, main
from contend.history.formats import parse_edn


def test_the_generated_history_has_jepsens_shape_and_reads_back():
    records = jepsen_history(operations=600)
    assert any(r.process == "nemesis" for r in records) and any(r.error for r in records)
    text = edn_lines(records)
    assert text.startswith("{:index 0, :time ") and ":type :info, :process :nemesis" in text
    again = parse_edn(text, "h.edn")
    assert [(r.process, r.type, r.f, r.value, r.time) for r in again] == [
        (r.process, r.type, r.f, r.value, r.time) for r in records
    ]


def test_main_prints_both_readers_and_their_ratio(capsys):
    assert main(["--operations", "500"]) == 0
    out = capsys.readouterr().out
    assert "EDN " in out and "JSONL " in out and "MB/s" in out and "records agree: yes" in out
