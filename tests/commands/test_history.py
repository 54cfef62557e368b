"""`contend history check`: exit codes, JSON, the HTML timeline."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from contend.cli import main
from contend.history.formats import write_jsonl
from contend.history.records import Record

DATA = Path(__file__).resolve().parents[1] / "data"


def check(capsys, *args):
    code = main(["history", "check", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def test_linearizable_exits_0(capsys):
    code, out, _ = check(capsys, DATA / "etcd_002.log", "--model", "cas-register")
    assert code == 0
    assert out.startswith("linearizable: 64 operations")


def test_not_linearizable_exits_1_and_names_the_operation(capsys):
    code, out, _ = check(capsys, DATA / "etcd_000.log", "--model", "cas-register")
    assert code == 1
    assert "not linearizable" in out
    assert "cannot linearize p11 read() → 2 [line 85]" in out


def test_unknown_exits_3(capsys, tmp_path):
    records = []
    for k in range(22):
        records.append(Record(k, "invoke", "write", None, k, k))
    records.append(Record(22, "invoke", "read", None, None, 22))
    for k in range(22):
        records.append(Record(k, "ok", "write", None, k, 1000 + k))
    records.append(Record(22, "ok", "read", None, 999, 2000))
    path = tmp_path / "hard.jsonl"
    write_jsonl(
        [Record(r.process, r.type, r.f, r.key, r.value, r.time, i) for i, r in enumerate(records)], path
    )
    code, out, _ = check(capsys, path, "--model", "cas-register", "--timeout", "0.2")
    assert code == 3
    assert out.startswith("unknown")


@pytest.mark.parametrize("name", ["malformed.edn", "malformed.log", "malformed.jsonl"])
def test_bad_input_exits_2_naming_the_line(capsys, name):
    code, _, err = check(capsys, DATA / name, "--model", "cas-register")
    assert code == 2
    assert f"{name}:3: expected" in err.replace("\n", "")


def test_missing_file_and_unknown_operation_exit_2(capsys, tmp_path):
    code, _, err = check(capsys, tmp_path / "absent.jsonl", "--model", "kv")
    assert code == 2 and "cannot read history" in err
    code, _, err = check(capsys, DATA / "etcd_000.log", "--model", "kv")
    assert code == 2 and "etcd_000.log: line 19: cas: kv has no operation 'cas'" in err.replace("\n", "")


def test_json_output(capsys):
    code, out, _ = check(capsys, DATA / "kv_bad.edn", "--model", "kv", "--json")
    assert code == 1
    doc = json.loads(out)
    assert doc["exit_code"] == 1
    assert doc["verdict"]["outcome"] == "not linearizable"
    assert doc["verdict"]["culprit"]["line"] == 7
    (part,) = doc["verdict"]["partitions"]
    assert part["key"] == "x" and part["longest_prefix"][-1]["state_after"] == "{'x': 'ab'}"


def test_registry_runs_the_linear_time_checks(capsys):
    code, out, _ = check(capsys, DATA / "registry.jsonl", "--model", "registry")
    assert code == 1
    assert "'alice' has id 1, then id 3 (not stable)" in out
    code, out, _ = check(capsys, DATA / "registry.jsonl", "--model", "registry", "--linear-only", "--json")
    doc = json.loads(out)
    assert code == 1 and doc["verdict"] is None and len(doc["invariants"]) == 2


def test_registry_duplicate_ids_caught_only_by_the_invariant(capsys, tmp_path):
    records = [
        Record(0, "invoke", "register", None, "a", 0, 0),
        Record(0, "ok", "register", None, 1, 1, 1),
        Record(1, "invoke", "register", None, "b", 2, 2),
        Record(1, "ok", "register", None, 1, 3, 3),
    ]
    path = tmp_path / "dup.jsonl"
    write_jsonl(records, path)
    code, out, _ = check(capsys, path, "--model", "registry")
    assert code == 1
    assert out.startswith("linearizable")  # name by name, it is
    assert "id 1 given to both 'a' and 'b'" in out


def test_mutex_model(capsys, tmp_path):
    both = [
        Record(0, "invoke", "acquire", "L", None, 0, 0),
        Record(1, "invoke", "acquire", "L", None, 1, 1),
        Record(0, "ok", "acquire", "L", True, 2, 2),
        Record(1, "ok", "acquire", "L", True, 3, 3),
        Record(0, "invoke", "release", "L", None, 4, 4),
        Record(0, "ok", "release", "L", "ok", 5, 5),
    ]
    path = tmp_path / "mutex.jsonl"
    write_jsonl(both, path)
    code, out, _ = check(capsys, path, "--model", "mutex")
    assert code == 1
    assert "not linearizable" in out and "process 1 acquired lock 'L' while process 0 still held it" in out
    fine = [both[0], both[2], both[4], both[5]]
    write_jsonl(fine, path)
    code, out, _ = check(capsys, path, "--model", "mutex")
    assert code == 0, out


def test_html_timeline_marks_the_illegal_operation(capsys, tmp_path):
    html_path = tmp_path / "t.html"
    code, out, _ = check(capsys, DATA / "cas_independent.edn", "--model", "cas-register", "--html", html_path)
    assert code == 1
    assert str(html_path) in out.replace("\n", "")
    page = html_path.read_text()
    assert page.startswith("<!DOCTYPE html>")
    assert "http://" not in page.replace("http://www.w3.org/2000/svg", "")  # nothing fetched
    assert page.count('class="culprit"') == 1
    assert "✗ cannot be linearized" in page
    assert "process nemesis" not in page and 'class="nemesis"' in page  # nemesis as marks, not a lane
    assert "process 0" in page and "process 6" in page
    assert "Longest linearizable prefix of key 2" in page
    svg = re.search(r"<svg.*</svg>", page, re.S)
    assert svg is not None
    ET.fromstring(svg.group())  # well-formed
    culprit = re.search(r'class="culprit"[^>]*><title>([^<]*)</title>', page)
    assert culprit is not None and "read" in culprit.group(1) and "line 17" in culprit.group(1)
