"""The JSONL, EDN and jepsen log formats: reading, writing, guessing, and errors that name the line."""

from __future__ import annotations

from pathlib import Path

import pytest

from contend.history.edn import Tagged
from contend.history.formats import (
    dumps_jsonl,
    guess_format,
    parse_edn,
    parse_jsonl,
    parse_log,
    read_history,
    write_jsonl,
)
from contend.history.records import HistoryError, Record

DATA = Path(__file__).resolve().parents[1] / "data"


def test_edn_line_with_every_field():
    (r,) = parse_edn(
        '{:process 9, :type :invoke, :f :append, :key "0", :value "x 9 0 y", :time 12, :index 4}'
    )
    assert r == Record(9, "invoke", "append", "0", "x 9 0 y", 12, 4)


def test_edn_values_keywords_vectors_sets_tags_comments():
    text = (
        "; a comment\n"
        '{:process :nemesis, :type :info, :f :start, :value [:isolated {"n1" #{"n2"}}], '
        ':error #jepsen/err "x\\"y\\n", :time 5N}\n'
        "{:process 2, :type :ok, :f :cas, :value [3 4], :extra #_ ignored 1.5}\n"
    )
    a, b = parse_edn(text)
    assert a.process == "nemesis" and a.type == "info" and a.f == "start"
    assert a.value == ["isolated", {"n1": frozenset({"n2"})}]
    assert a.error == Tagged("jepsen/err", 'x"y\n') and a.time == 5
    assert b.value == [3, 4] and b.index == 1


def test_edn_single_vector_of_maps():
    records = parse_edn("[{:process 0 :type :invoke :f :read}\n {:process 0 :type :ok :f :read :value 1}]")
    assert [r.type for r in records] == ["invoke", "ok"]


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        (
            "{:process 0, :type :invoke, :f :read}\n{:process 0, :type :ok, :f :read, :value [1 2}\n",
            ":2: expected ']'",
        ),
        ("{:process 0, :type :invoke, :f :read}\n{:type :ok, :f :read}\n", ":2: expected a :process"),
        (
            "{:process 0, :type :invoke, :f :read}\n\n{:process 0, :type :done, :f :read}\n",
            ":3: expected :type",
        ),
        (
            '{:process 0, :type :invoke, :f :read}\n{:process 0, :type :ok, :value "open}\n',
            ":2: an unterminated string",
        ),
        ("{:process 0, :type :invoke, :f :read}\n[1 2]\n", ":2: expected an EDN map"),
        ("{:process 0, :type :invoke, :f :read\n", ":1: expected '}'"),
        ("{:process 1.5, :type :invoke, :f :read}\n", ":1: expected :process to be an integer"),
    ],
)
def test_edn_errors_name_the_line(text, needle):
    with pytest.raises(HistoryError) as exc:
        parse_edn(text, source="h.edn")
    assert f"h.edn{needle}" in str(exc.value)


def test_log_lines_with_nemesis_and_info():
    text = (
        "INFO  jepsen.core - Running test\n"
        "INFO  jepsen.util - 3\t:invoke\t:cas\t[3 0]\n"
        "2014-06-04 12:06:40,375{GMT}\tINFO\t[jepsen worker 3] jepsen.util: 3\t:info\t:cas\t:timed-out\n"
        "INFO  jepsen.util - :nemesis\t:info\t:start\tnil\n"
        "INFO  jepsen.util - 4\t:invoke\t:read\tnil\n"
        "INFO  jepsen.util - 4\t:ok\t:read\t3\t\n"
    )
    records = parse_log(text)
    assert [(r.process, r.type, r.f, r.value) for r in records] == [
        (3, "invoke", "cas", [3, 0]),
        (3, "info", "cas", "timed-out"),
        ("nemesis", "info", "start", None),
        (4, "invoke", "read", None),
        (4, "ok", "read", 3),
    ]
    assert [r.line for r in records] == [2, 3, 4, 5, 6]


def test_log_lines_aligned_with_spaces():
    """Some shipped logs (Porcupine's etcd_100..102) had their tabs turned into spaces."""
    text = (
        "INFO  jepsen.util - Relative time begins now\n"
        "INFO  jepsen.util - 4   :invoke :cas    [1 2]\n"
        "INFO  jepsen.util - 4   :fail   :cas    [1 2]   :no-match\n"
        "INFO  jepsen.util - 2   :invoke :read   nil\n"
        "INFO  jepsen.util - 2   :info   :read   :timed-out\n"
        'INFO  jepsen.util - 1   :invoke :write  {:k "a b"}  \n'
    )
    records = parse_log(text)
    assert [(r.process, r.type, r.f, r.value, r.error) for r in records] == [
        (4, "invoke", "cas", [1, 2], None),
        (4, "fail", "cas", [1, 2], "no-match"),
        (2, "invoke", "read", None, None),
        (2, "info", "read", "timed-out", None),
        (1, "invoke", "write", {"k": "a b"}, None),
    ]
    with pytest.raises(HistoryError, match=r"s.log:1: expected an EDN value"):
        parse_log("INFO  jepsen.util - 4   :invoke :cas    [1 2\n", "s.log")


def test_log_errors_name_the_line():
    with pytest.raises(
        HistoryError, match=r"malformed.log:3: expected a type \(:invoke, :ok, :fail or :info\)"
    ):
        read_history(DATA / "malformed.log")
    with pytest.raises(HistoryError, match=r"x.log:2: expected an EDN value, got '\[1 2'"):
        parse_log(
            "INFO  jepsen.util - 0\t:invoke\t:read\tnil\nINFO  jepsen.util - 0\t:ok\t:read\t[1 2\n", "x.log"
        )
    with pytest.raises(HistoryError, match="found none"):
        parse_log("nothing here\n", "empty.log")


def test_jsonl_errors_name_the_line():
    with pytest.raises(HistoryError, match=r"malformed.jsonl:3: expected a JSON object"):
        read_history(DATA / "malformed.jsonl")
    with pytest.raises(HistoryError, match=r"x:2: expected a JSON object, got list"):
        parse_jsonl('{"process":0,"type":"invoke","f":"read"}\n[1]\n', "x")
    with pytest.raises(HistoryError, match=r'x:1: time must be integer, got "soon" \(the record format'):
        parse_jsonl('{"process":0,"type":"invoke","f":"read","time":"soon"}\n', "x")
    with pytest.raises(HistoryError, match=r"x:1: the record must contain \['f'\] properties"):
        parse_jsonl('{"process":0,"type":"invoke"}\n', "x")
    with pytest.raises(HistoryError, match=r"x:1: type must be one of \['invoke', 'ok', 'fail', 'info'\]"):
        parse_jsonl('{"process":0,"type":"done","f":"read"}\n', "x")


def test_edn_file_errors_name_the_line():
    with pytest.raises(HistoryError, match=r"malformed.edn:3: expected '\]', got '\}'"):
        read_history(DATA / "malformed.edn")


def test_jsonl_round_trip(tmp_path):
    records = read_history(DATA / "cas_independent.edn")
    path = tmp_path / "h.jsonl"
    write_jsonl(records, path)
    again = read_history(path)
    # JSON has no sets: the nemesis's set of nodes comes back as a sorted list.
    assert records[5].value == ["isolated", {"n1": frozenset({"n2", "n3"})}]
    assert again[5].value == ["isolated", {"n1": ["n2", "n3"]}]
    assert again[:5] + again[6:] == records[:5] + records[6:]
    assert dumps_jsonl(again) == path.read_text()
    log = read_history(DATA / "etcd_000.log")
    assert parse_jsonl(dumps_jsonl(log)) == log


def test_guess_format():
    assert guess_format("h.jsonl", "") == "jsonl"
    assert guess_format("h.txt", "\n{:process 0}") == "edn"
    assert guess_format("h.txt", '{"process": 0}') == "jsonl"
    assert guess_format("h.txt", "INFO  jepsen.util - 0\t:invoke\t:read\tnil") == "log"
    with pytest.raises(HistoryError, match="cannot tell the format"):
        guess_format("h.txt", "hello")


def test_read_history_missing_file(tmp_path):
    with pytest.raises(HistoryError, match="cannot read history"):
        read_history(tmp_path / "nope.jsonl")


def test_an_empty_history_is_read_as_no_records_but_other_text_is_not_a_history():
    assert parse_jsonl("", "h.jsonl") == [] == parse_jsonl("\n  \n", "h.jsonl")
    assert parse_edn("; nothing yet\n", "h.edn") == [] == parse_edn("[]", "h.edn") == parse_edn("()", "h.edn")
    assert (
        parse_log("", "h.log") == [] == parse_log("INFO  jepsen.util - Relative time begins now\n", "h.log")
    )
    with pytest.raises(HistoryError, match="found none"):
        parse_log("hello\n", "h.log")
    assert guess_format("h.txt", "  \n") == "jsonl" and guess_format("h.txt", "; comment\n(") == "edn"
    assert guess_format("h.txt", "{ :process 0}") == "edn" and guess_format("h.txt", "(\n{:a 1})") == "edn"


def test_edn_record_literals_read_as_their_maps_and_lines_are_each_maps_own():
    records = parse_edn(
        "[#jepsen.history.Op{:index 0, :time 5, :type :invoke, :process 0, :f :read, :value nil}\n"
        " {:index 1,\n  :time 6, :type :ok, :process 0, :f :read, :value 2r11}]\n",
        "h.edn",
    )
    assert [(r.type, r.value, r.line) for r in records] == [("invoke", None, 1), ("ok", 3, 2)]
