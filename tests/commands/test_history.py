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
    code, out, _ = check(capsys, path, "--model", "cas-register", "--search-seconds", "0.2")
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
    err = err.replace("\n", "")
    assert code == 2 and "etcd_000.log: the kv model does not know the operation(s) 'cas' ×35" in err
    assert "it accepts get, put, append" in err and "--lenient" in err


def test_json_output(capsys):
    code, out, _ = check(capsys, DATA / "kv_bad.edn", "--model", "kv", "--json", "-")
    assert code == 1
    whole = json.loads(out)
    assert (
        whole["command"] == "history" and whole["exit_code"] == 1 and whole["verdict"] == "not-linearizable"
    )
    (doc,) = whole["files"]
    assert doc["exit_code"] == 1 and doc["verdict"] == "not-linearizable"
    assert doc["linearizability"]["outcome"] == "not linearizable"
    assert doc["linearizability"]["culprit"]["line"] == 7
    (part,) = doc["linearizability"]["partitions"]
    assert part["key"] == "x" and part["longest_prefix"][-1]["state_after"] == "{'x': 'ab'}"


def test_registry_runs_the_linear_time_checks(capsys):
    code, out, _ = check(capsys, DATA / "registry.jsonl", "--model", "registry")
    assert code == 1
    assert "'alice' has id 1, then id 3 (not stable)" in out
    code, out, _ = check(
        capsys, DATA / "registry.jsonl", "--model", "registry", "--linear-only", "--json", "-"
    )
    (doc,) = json.loads(out)["files"]
    assert code == 1 and doc["linearizability"] is None and len(doc["invariants"]) == 2


def test_registry_duplicate_ids_caught_by_the_whole_model_and_the_invariant(capsys, tmp_path):
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
    assert out.startswith("not linearizable")  # the whole registry's model; name by name, it would be
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
    assert page.count('class="ok involved"') == 1  # the culprit, named beside its bar
    assert page.count('class="involved-label"') == 1
    assert "cannot be linearized here or later" in page
    assert "pnemesis" not in page and 'class="band"' in page  # nemesis as bands over the lanes, not a lane
    assert ">process 0<" in page or ">process 0 ·" in page  # lanes named as the verdict names processes
    assert "Longest linearizable prefix of key 2" in page
    svg = re.search(r"<svg.*</svg>", page, re.S)
    assert svg is not None
    ET.fromstring(svg.group())  # well-formed
    culprit = re.search(r'class="ok involved"[^>]*><title>([^<]*)</title>', page)
    assert culprit is not None and "read" in culprit.group(1) and "line 17" in culprit.group(1)


def _write(path, rows):
    """Records from (process, type, f, key, value) rows, one time unit apart."""
    write_jsonl([Record(p, t, f, k, v, i, i) for i, (p, t, f, k, v) in enumerate(rows)], path)
    return path


BOTH_LOCK = [
    (0, "invoke", "lock", "L", None),
    (1, "invoke", "lock", "L", None),
    (0, "ok", "lock", "L", True),
    (1, "ok", "lock", "L", True),
]


def test_an_operation_the_model_does_not_know_is_refused_not_skipped(capsys, tmp_path):
    """The silent pass of issue 14: `lock` instead of `acquire` made every violation a pass."""
    path = _write(tmp_path / "typo.jsonl", BOTH_LOCK)
    code, out, err = check(capsys, path, "--model", "mutex")
    err = err.replace("\n", "")
    assert code == 2 and out == ""
    assert "the mutex model does not know the operation(s) 'lock' ×2" in err
    assert "it accepts acquire, release, extend, expire, incr, read" in err


def test_lenient_skips_and_says_so_but_never_passes_an_empty_check(capsys, tmp_path):
    path = _write(tmp_path / "typo.jsonl", BOTH_LOCK)
    code, out, err = check(capsys, path, "--model", "mutex", "--lenient")
    assert code == 2 and "nothing to check" in err and "none of its 2 operation(s)" in err
    mixed = _write(
        tmp_path / "mixed.jsonl",
        [
            *BOTH_LOCK,
            (2, "invoke", "acquire", "L", None),
            (2, "ok", "acquire", "L", True),
            (3, "invoke", "acquire", "L", None),
            (3, "ok", "acquire", "L", True),
        ],
    )
    code, out, _ = check(capsys, mixed, "--model", "mutex", "--lenient")
    assert code == 1 and "--lenient: skipped 'lock' ×2" in out and "not linearizable" in out


def test_a_history_where_nothing_took_effect_is_linearizable_and_says_so(capsys, tmp_path):
    """As Jepsen's checkers and Porcupine have it (the corpus in tests/history/test_api.py cites them)."""
    path = _write(
        tmp_path / "failed.jsonl",
        [(0, "invoke", "write", None, 1), (0, "fail", "write", None, 1), (1, "invoke", "write", None, 2)],
    )
    code, out, err = check(capsys, path, "--model", "cas-register")
    assert code == 0 and err == ""
    assert out.startswith(
        "linearizable: 0 of 2 operations took effect; 1 pending, 1 failed; model cas-register"
    )


def test_no_client_operation_passes_with_a_warning_or_exits_2_with_require_ops(capsys, tmp_path):
    path = tmp_path / "nemesis.edn"
    path.write_text("{:process :nemesis, :type :info, :f :start, :value nil}\n")
    code, out, err = check(capsys, path, "--model", "cas-register")
    assert code == 0 and out.startswith("linearizable: no client operation, nothing was checked")
    assert (
        "warning: " in err
        and "no client operation (only 1 nemesis event(s)): nothing was checked" in err.replace("\n", "")
    )
    code, out, err = check(capsys, path, "--model", "cas-register", "--json", "-")
    assert code == 0 and "nothing was checked" in json.loads(out)["files"][0]["warning"]
    code, out, err = check(capsys, path, "--model", "cas-register", "--require-ops")
    assert (
        code == 2
        and out == ""
        and "--require-ops refuses a history that checks nothing" in err.replace("\n", "")
    )
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    code, out, _ = check(capsys, empty, DATA / "etcd_002.log", "--model", "cas-register", "--require-ops")
    assert code == 2 and "2 files: 1 linearizable, 1 bad input; exit 2" in out


def test_a_jepsen_history_written_as_a_list_with_comments_is_read(capsys, tmp_path):
    """Issue 30: a top-level ( … ) with ; comments between the maps was refused at line 1."""
    path = tmp_path / "history.edn"
    path.write_text(
        "(\n; a comment\n{:index 0, :time 100, :type :invoke, :process 0, :f :write, :value 1}\n"
        "; another\n{:index 1, :time 200, :type :ok, :process 0, :f :write, :value 1}\n"
        "{:index 2, :time 300, :type :invoke, :process 1, :f :read, :value nil}\n"
        "{:index 3, :time 400, :type :ok, :process 1, :f :read, :value 2})\n"
    )
    code, out, _ = check(capsys, path, "--model", "cas-register")
    assert code == 1 and "cannot linearize p1 read() → 2 [line 6]" in out


def test_schema_errors_name_the_line_and_the_field(capsys, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(
        '{"process": 0, "type": "invoke", "f": "read"}\n{"process": 1.5, "type": "ok", "f": "read"}\n'
    )
    code, _, err = check(capsys, path, "--model", "cas-register")
    err = err.replace("\n", "")
    assert code == 2 and "bad.jsonl:2: process must be integer or string, got 1.5" in err
    assert "docs/HISTORY.md" in err


def test_the_schema_file_describes_every_field_the_reader_knows():
    from contend.history.formats import record_schema

    schema = record_schema()
    assert set(schema["required"]) == {"process", "type", "f"}
    assert set(schema["properties"]) == {"process", "type", "f", "key", "value", "time", "index", "error"}
    assert schema["properties"]["type"]["enum"] == ["invoke", "ok", "fail", "info"]


def test_many_files_one_line_each_and_the_worst_exit_code(capsys, tmp_path):
    typo = _write(tmp_path / "typo.jsonl", BOTH_LOCK)
    code, out, _ = check(capsys, DATA / "etcd_002.log", DATA / "etcd_002.log", "--model", "cas-register")
    assert code == 0 and "2 files: 2 linearizable; exit 0" in out
    files = [DATA / "etcd_002.log", typo, DATA / "etcd_000.log", tmp_path / "absent.log"]
    code, out, _ = check(capsys, *files, "--model", "cas-register")
    lines = out.replace("\n ", " ").splitlines()
    assert code == 1  # not linearizable outranks bad input
    assert lines[0].startswith(f"{DATA / 'etcd_002.log'}: linearizable")
    assert lines[1].startswith(f"{typo}: error: ") and "does not know the operation(s) 'lock'" in lines[1]
    assert lines[2].startswith(f"{DATA / 'etcd_000.log'}: not linearizable")
    assert lines[3].startswith(f"{tmp_path / 'absent.log'}: error: cannot read history")
    assert lines[4] == "4 files: 1 linearizable, 1 not linearizable, 2 bad input; exit 1"
    code, out, _ = check(capsys, DATA / "etcd_002.log", typo, "--model", "cas-register", "--json", "-")
    whole = json.loads(out)
    docs = whole["files"]
    assert code == 2 and whole["exit_code"] == 2 and whole["verdict"] == "bad-input"
    assert [d["exit_code"] for d in docs] == [0, 2] and "error" in docs[1]


def test_html_needs_one_file(capsys, tmp_path):
    code, _, err = check(
        capsys,
        DATA / "etcd_002.log",
        DATA / "etcd_000.log",
        "--model",
        "cas-register",
        "--html",
        tmp_path / "t.html",
    )
    assert code == 2 and "--html writes one timeline" in err and not (tmp_path / "t.html").exists()


def test_the_time_budget_covers_the_whole_history(capsys, tmp_path):
    """Many hard partitions, one budget: unknown (exit 3), with the decided and open ones."""
    records = []
    for key in ("a", "b", "c"):
        base = len(records)
        for k in range(22):
            records.append(Record(f"{key}{k}", "invoke", "write", key, k, base + k))
        records.append(Record(f"{key}r", "invoke", "read", key, None, base + 22))
        for k in range(22):
            records.append(Record(f"{key}{k}", "ok", "write", key, k, base + 1000 + k))
        records.append(Record(f"{key}r", "ok", "read", key, 999, base + 2000))
    records.append(Record("e", "invoke", "read", "easy", None, 9000))
    records.append(Record("e", "ok", "read", "easy", None, 9001))
    records.sort(key=lambda r: r.time)
    path = tmp_path / "hard.jsonl"
    write_jsonl(
        [Record(r.process, r.type, r.f, r.key, r.value, r.time, i) for i, r in enumerate(records)], path
    )
    code, out, _ = check(capsys, path, "--model", "cas-register", "--search-seconds", "0.3", "--json", "-")
    doc = json.loads(out)["files"][0]["linearizability"]
    assert code == 3 and doc["outcome"] == "unknown" and doc["timeout"] == 0.3
    assert doc["partitions_checked"] == 4 and doc["partitions_decided"] == 1 and doc["partitions_open"] == 3
    assert sorted(p["key"] for p in doc["partitions"]) == ["a", "b", "c"]


ROOT = Path(__file__).resolve().parents[2]


#: The model of each ```jsonl example in docs/HISTORY.md, in order: a Jepsen history, then one per model.
DOC_EXAMPLES = ["cas-register", "cas-register", "kv", "registry", "mutex"]


@pytest.mark.parametrize("k", range(len(DOC_EXAMPLES)))
def test_every_example_in_docs_history_checks_as_shown(capsys, tmp_path, k):
    """docs/HISTORY.md shows a Jepsen history in JSONL, then one example per model, in its table's
    order: each is valid and passes."""
    blocks = re.findall(r"```jsonl\n(.*?)```", (ROOT / "docs" / "HISTORY.md").read_text(), re.S)
    assert len(blocks) == len(DOC_EXAMPLES)
    path = tmp_path / f"{k}.jsonl"
    path.write_text(blocks[k])
    code, out, err = check(capsys, path, "--model", DOC_EXAMPLES[k])
    assert code == 0 and out.startswith("linearizable"), out + err


def test_the_edn_and_python_examples_in_docs_history_work_as_shown(capsys, tmp_path, monkeypatch):
    text = (ROOT / "docs" / "HISTORY.md").read_text()
    (edn,) = re.findall(r"```edn\n(.*?)```", text, re.S)
    (python,) = re.findall(r"```python\n(.*?)```", text, re.S)
    (tmp_path / "history.edn").write_text(edn)
    code, out, _ = check(capsys, tmp_path / "history.edn", "--model", "cas-register")
    assert code == 0 and out.startswith("linearizable: 2 operations in 1 partition(s)"), out
    monkeypatch.chdir(tmp_path)
    exec(compile(python, "HISTORY.md", "exec"), {})
    printed = capsys.readouterr().out
    assert printed.startswith("linearizable: 2 operations") and printed.rstrip().endswith(" 0"), printed


def test_lines_out_of_time_order_are_read_in_time_order(capsys, tmp_path):
    """Threads may write their lines in any order when every record has a time (docs/HISTORY.md)."""
    rows = [
        '{"process": 1, "type": "ok", "f": "write", "value": 2, "time": 30}',
        '{"process": 0, "type": "invoke", "f": "write", "value": 1, "time": 10}',
        '{"process": 1, "type": "invoke", "f": "write", "value": 2, "time": 20}',
        '{"process": 0, "type": "ok", "f": "write", "value": 1, "time": 15}',
        '{"process": 2, "type": "invoke", "f": "read", "value": null, "time": 40}',
        '{"process": 2, "type": "ok", "f": "read", "value": 1, "time": 50}',
    ]
    path = tmp_path / "shuffled.jsonl"
    path.write_text("\n".join(rows) + "\n")
    code, out, _ = check(capsys, path, "--model", "cas-register")
    assert code == 1 and "cannot linearize p2 read() → 1 [line 5]" in out  # 2 was written last


# --- found by trying histories written elsewhere (each was a false alarm, a miss or a traceback)


def _lines(path, *objects):
    path.write_text("".join(json.dumps(o) + "\n" for o in objects))
    return path


def _op(process, kind, f, key=None, value=None, time=None):
    doc = {"process": process, "type": kind, "f": f, "key": key, "value": value}
    if time is not None:
        doc["time"] = time
    return doc


def test_register_many_is_checked_by_the_whole_registry(capsys, tmp_path):
    path = _lines(
        tmp_path / "many.jsonl",
        _op(0, "invoke", "register_many", value=["a", "b"]),
        _op(0, "ok", "register_many", value=[1, 2]),
        _op(1, "invoke", "lookup", value="b"),
        _op(1, "ok", "lookup", value=2),
    )
    code, out, _ = check(capsys, path, "--model", "registry")
    assert code == 0, out


def test_locks_and_counters_on_other_keys_are_judged_apart(capsys, tmp_path):
    ms = 1_000_000
    path = _lines(
        tmp_path / "two.jsonl",
        _op(0, "invoke", "acquire", "A", time=0),
        _op(0, "ok", "acquire", "A", True, time=1 * ms),
        _op(0, "invoke", "incr", "counter-A", 1, time=2 * ms),
        _op(0, "ok", "incr", "counter-A", 1, time=3 * ms),
        _op(1, "invoke", "acquire", "B", time=4 * ms),
        _op(1, "ok", "acquire", "B", True, time=5 * ms),
        _op(1, "invoke", "incr", "counter-B", 1, time=6 * ms),
        _op(1, "ok", "incr", "counter-B", 1, time=7 * ms),
        _op(1, "invoke", "read", "counter-B", time=8 * ms),
        _op(1, "ok", "read", "counter-B", 1, time=9 * ms),
        _op(1, "invoke", "release", "B", time=10 * ms),
        _op(1, "ok", "release", "B", "ok", time=11 * ms),
        _op(0, "invoke", "release", "A", time=12 * ms),
        _op(0, "ok", "release", "A", "ok", time=13 * ms),
    )
    code, out, _ = check(capsys, path, "--model", "mutex", "--ttl-ms", "1000")
    assert code == 0 and "invariants hold: critical sections, locked counter, lease validity" in out, out


def test_a_recorded_expiry_or_an_unseen_one_ends_a_hold(capsys, tmp_path):
    ms = 1_000_000
    seen = _lines(
        tmp_path / "seen.jsonl",
        _op(0, "invoke", "acquire", "L"),
        _op(0, "ok", "acquire", "L", True),
        _op("harness", "invoke", "expire", "L"),
        _op("harness", "ok", "expire", "L"),
        _op(1, "invoke", "acquire", "L"),
        _op(1, "ok", "acquire", "L", True),
    )
    code, out, _ = check(capsys, seen, "--model", "mutex")
    assert code == 0 and "invariants hold: lock holds" in out, out
    unseen = _lines(
        tmp_path / "unseen.jsonl",
        _op(0, "invoke", "acquire", "L", time=0),
        _op(0, "ok", "acquire", "L", True, time=1 * ms),
        _op(1, "invoke", "acquire", "L", time=50 * ms),
        _op(1, "ok", "acquire", "L", True, time=51 * ms),
    )
    code, out, _ = check(capsys, unseen, "--model", "mutex", "--lease-expiry", "--ttl-ms", "10")
    assert code == 0, out
    code, out, _ = check(capsys, unseen, "--model", "mutex", "--ttl-ms", "100")  # the lease had 50 ms left
    assert code == 1 and "lease validity" in out


def test_a_fencing_token_may_start_at_zero(capsys, tmp_path):
    path = _lines(
        tmp_path / "zero.jsonl",
        _op(0, "invoke", "acquire", "L"),
        _op(0, "ok", "acquire", "L", 0),
        _op(0, "invoke", "release", "L"),
        _op(0, "ok", "release", "L", "ok"),
        _op(1, "invoke", "acquire", "L"),
        _op(1, "ok", "acquire", "L", 1),
    )
    code, out, _ = check(capsys, path, "--model", "mutex")
    assert code == 0 and "fencing tokens" in out, out


def test_a_nemesis_line_without_time_keeps_the_client_times(capsys, tmp_path):
    path = _lines(
        tmp_path / "nemesis.jsonl",
        _op(0, "invoke", "write", "x", 1, time=100),
        _op(1, "ok", "read", "x", 1, time=400),
        _op(0, "ok", "write", "x", 1, time=200),
        _op(1, "invoke", "read", "x", time=300),
        {"process": "nemesis", "type": "info", "f": "start-partition", "value": "majority"},
    )
    code, out, _ = check(capsys, path, "--model", "cas-register")
    assert code == 0, out
    mixed = _lines(
        tmp_path / "mixed.jsonl", _op(0, "invoke", "write", value=1, time=100), _op(0, "ok", "write", value=1)
    )
    code, _, err = check(capsys, mixed, "--model", "cas-register")
    assert code == 2 and "line 2: no time, but line 1 has one" in err.replace("\n", "")


@pytest.mark.parametrize(
    ("rows", "args", "message"),
    [
        (
            [_op(0, "invoke", "write", value=1), _op(0, "ok", "write", value=1)],
            ["--linear-only"],
            "the cas-register model has none",
        ),
        (
            [_op(0, "invoke", "write", value=1, time=10.5), _op(0, "ok", "write", value=1, time=11)],
            [],
            "time must be integer, got 10.5",
        ),
        (
            [_op(0, "invoke", "cas", value={"old": 1}), _op(0, "ok", "cas", value=True)],
            [],
            "cas expects [old new], got {'old': 1}",
        ),
    ],
)
def test_what_decides_nothing_or_cannot_be_read_is_refused(capsys, tmp_path, rows, args, message):
    path = _lines(tmp_path / "h.jsonl", *rows)
    code, out, err = check(capsys, path, "--model", "cas-register", *args)
    assert code == 2 and out == "" and message in err.replace("\n", ""), err


def test_ttl_needs_times_and_jsonl_is_not_one_array(capsys, tmp_path):
    path = _lines(tmp_path / "h.jsonl", _op(0, "invoke", "acquire", "L"), _op(0, "ok", "acquire", "L", True))
    code, _, err = check(capsys, path, "--model", "mutex", "--ttl-ms", "10")
    assert code == 2 and "--ttl-ms compares lease lengths with the records' times" in err.replace("\n", "")
    array = tmp_path / "h.json"
    array.write_text(json.dumps([_op(0, "invoke", "read"), _op(0, "ok", "read")], indent=2))
    code, _, err = check(capsys, array, "--model", "cas-register")
    assert code == 2 and "JSONL is one JSON object per line, not one JSON array" in err.replace("\n", "")


def test_jepsen_object_errors_and_object_keys_are_read(capsys, tmp_path):
    edn = tmp_path / "h.edn"
    edn.write_text(
        "{:type :invoke, :f :write, :value 3, :process 0, :time 1}\n"
        '{:type :info, :f :write, :value 3, :process 0, :time 2, :error #object[java.net.SocketTimeoutException 0x5a2e4553 "Read timed out"]}\n'
        "{:type :invoke, :f :read, :value nil, :process 5, :time 3}\n"
        "{:type :ok, :f :read, :value 3, :process 5, :time 4}\n"
    )
    code, out, _ = check(capsys, edn, "--model", "cas-register")
    assert code == 0, out
    keyed = _lines(
        tmp_path / "k.jsonl",
        _op(0, "invoke", "write", {"table": "t", "id": [1, 2]}, 5),
        _op(0, "ok", "write", {"table": "t", "id": [1, 2]}, 5),
        _op(0, "invoke", "read", {"id": [1, 2], "table": "t"}),
        _op(0, "ok", "read", {"id": [1, 2], "table": "t"}, 5),
    )
    code, out, _ = check(capsys, keyed, "--model", "cas-register")
    assert code == 0 and "1 partition(s)" in out, out


def test_a_lease_that_ran_out_before_its_acquire_returned_was_never_held(capsys, tmp_path):
    ms = 1_000_000
    path = _lines(
        tmp_path / "late.jsonl",
        _op(1, "invoke", "acquire", "L", time=0),
        _op(0, "invoke", "acquire", "L", time=11 * ms),
        _op(0, "ok", "acquire", "L", True, time=12 * ms),
        _op(1, "ok", "acquire", "L", True, time=15 * ms),  # its 10 ms lease ended before this ack
        _op(1, "invoke", "release", "L", time=16 * ms),
        _op(1, "ok", "release", "L", "not-owner", time=17 * ms),
        _op(0, "invoke", "release", "L", time=20 * ms),
        _op(0, "ok", "release", "L", "ok", time=21 * ms),
    )
    code, out, _ = check(capsys, path, "--model", "mutex", "--lease-expiry", "--ttl-ms", "10")
    assert code == 0 and "invariants hold: lock holds, lease validity" in out, out


def test_object_keys_partition_every_model_and_names_are_json(capsys, tmp_path):
    lock = _lines(
        tmp_path / "lock.jsonl",
        _op(0, "invoke", "acquire", {"db": 1}),
        _op(0, "ok", "acquire", {"db": 1}, True),
    )
    assert check(capsys, lock, "--model", "mutex")[0] == 0
    names = _lines(
        tmp_path / "names.jsonl",
        _op(0, "invoke", "register_many", value=[["a"], "b"]),
        _op(0, "ok", "register_many", value=[1, 2]),
        _op(1, "invoke", "reverse", value=1),
        _op(1, "ok", "reverse", value=["a"]),
    )
    assert check(capsys, names, "--model", "registry")[0] == 0
    text = _lines(
        tmp_path / "text.jsonl",
        _op(0, "invoke", "register_many", value="ab"),
        _op(0, "ok", "register_many", value=[1, 2]),
    )
    code, _, err = check(capsys, text, "--model", "registry")
    assert code == 2 and "register_many expects a list of names, got 'ab'" in err


def test_one_value_per_line_and_json_output_for_bad_input(capsys, tmp_path):
    path = tmp_path / "split.jsonl"
    path.write_text(
        '{"process": 0, "type": "invoke", "f": "write", "value": "a\nb"}\n{"process": 0, "type": "ok", "f": "write", "value": 1},{"x": 1}\n'
    )
    code, out, err = check(capsys, path, "--model", "cas-register", "--json", "-")
    assert code == 2 and "split.jsonl:1: expected a JSON object, but Unterminated string" in err.replace(
        "\n", ""
    )
    (doc,) = json.loads(out)["files"]
    assert doc["exit_code"] == 2 and doc["linearizability"] is None and "Unterminated string" in doc["error"]
