"""The EDN reader: everything a Jepsen history uses, errors that name the line, and a round trip."""

from __future__ import annotations

import datetime
import uuid
from decimal import Decimal
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from contend.history.edn import Regex, Tagged, edn_text, first_value_end, read_one, read_values
from contend.history.records import HistoryError


def test_a_top_level_list_vector_or_bare_sequence_of_maps_with_comments_between():
    listed = "; jepsen history\n(\n {:process 0 :type :invoke :f :read}\n ; a comment between\n {:process 0 :type :ok :f :read :value 1}\n)\n"
    assert list(read_values(listed, "h.edn")) == [
        (3, {"process": 0, "type": "invoke", "f": "read"}),
        (5, {"process": 0, "type": "ok", "f": "read", "value": 1}),
    ]
    vector = listed.replace("(", "[").replace(")", "]")
    assert list(read_values(vector, "h.edn")) == list(read_values(listed, "h.edn"))
    bare = "{:a 1} ; trailing\n\n#_{:discarded 1}\n{:b\n 2}"
    assert list(read_values(bare, "h.edn")) == [(1, {"a": 1}), (4, {"b": 2})]
    assert list(read_values("", "h.edn")) == [] == list(read_values("; nothing\n[]\n", "h.edn"))


def test_keywords_namespaces_and_namespaced_maps():
    assert read_one("[:read :jepsen.nemesis/start a.b/c]", "x") == ["read", "jepsen.nemesis/start", "a.b/c"]
    assert read_one('#:db{:id 1, :_/plain 2, :other/k 3, "text" 4, sym 5, :nested {:x 1}}', "x") == {
        "db/id": 1,
        "plain": 2,
        "other/k": 3,
        "text": 4,  # a string key is not namespaced
        "db/sym": 5,
        "db/nested": {"x": 1},
    }


def test_sets_tags_regex_characters_and_discard():
    value = read_one(
        '[#{1 2} #inst "1985-04-12T23:20:50.52Z" #uuid "f81d4fae-7dec-11d0-a765-00a0c91e6bf6" '
        '#object[java.net.SocketTimeoutException 0x5a2e4553 "Read timed out"] #my/tag {:a 1} '
        '#"\\d+\\"x" \\a \\newline \\u00e9 #_ :gone #_ #_ 1 2 :kept]',
        "x",
    )
    assert value == [
        frozenset({1, 2}),
        datetime.datetime(1985, 4, 12, 23, 20, 50, 520000, tzinfo=datetime.timezone.utc),
        uuid.UUID("f81d4fae-7dec-11d0-a765-00a0c91e6bf6"),
        Tagged("object", ["java.net.SocketTimeoutException", 0x5A2E4553, "Read timed out"]),
        Tagged("my/tag", {"a": 1}),
        Regex('\\d+\\"x'),
        "a",
        "\n",
        "é",
        "kept",
    ]
    assert read_one('#inst "2024-01-02T03:04:05.123456789-05:30"', "x") == datetime.datetime(
        2024, 1, 2, 3, 4, 5, 123456, tzinfo=datetime.timezone(-datetime.timedelta(hours=5, minutes=30))
    )
    assert read_one("#{[1 2] {:a 1}}", "x") == frozenset({(1, 2), (("a", 1),)})  # frozen to be hashed


def test_numbers():
    text = "[0 -7 +7 1N 12345678901234567890 2r101 36rZZ 0x1F 017 1.5 -2.5e3 1.5M 3M 1/3 -2/4 ##Inf ##-Inf]"
    assert read_one(text, "x") == [
        0,
        -7,
        7,
        1,
        12345678901234567890,
        5,
        1295,
        31,
        15,
        1.5,
        -2500.0,
        Decimal("1.5"),
        Decimal("3"),
        Fraction(1, 3),
        Fraction(-1, 2),
        float("inf"),
        float("-inf"),
    ]
    assert type(read_one("1.5M", "x")) is Decimal and read_one("nil", "x") is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{:a 1}\n{:b [1 2}\n", "h.edn:2: expected ']', got '}'"),
        ("{:a 1}\n{:b [1\n2}\n", "h.edn:3: expected ']', got '}' (what opens at line 2)"),
        ("{:a 1}\n{:b 1\n", "h.edn:2: expected '}' to close what opens here"),
        ("(\n{:a 1}\n", "h.edn:1: expected ')' to close what opens here"),
        ('{:a 1}\n{:b "open}\n', "h.edn:2: an unterminated string"),
        ("{:a}\n", "h.edn:1: expected a map with key/value pairs, got an odd count"),
        ("{: 1}\n", "h.edn:1: expected a keyword name after ':'"),
        ("{:a 12abc}\n", "h.edn:1: expected a number, got '12abc'"),
        ("{:a 2r2}\n", "h.edn:1: expected a number, got '2r2' (radix 2)"),
        ("{:a 1}\n)\n", "h.edn:2: unexpected ')'"),
        ("{:a 1}\n{:a #_}\n", "h.edn:2: expected a value after #_, got '}'"),
        ("{:a 1}\n#inst\n", "h.edn:2: expected a value, but the input ended"),
        ('{:a #inst "noon"}\n', 'h.edn:1: expected #inst "an RFC 3339 time", got "noon"'),
        ('{:a #uuid "x"}\n', 'h.edn:1: expected #uuid "a UUID", got "x"'),
        ("#:ns [1]\n", "h.edn:1: expected a map after #:ns, got '['"),
        ("{:a #}\n", "h.edn:1: expected a tag, a set, #_ or a closed #\"regex\" after '#', got '#'"),
        ("{:a \\nope}\n", "h.edn:1: expected a character such as"),
    ],
)
def test_what_is_not_edn_is_an_error_naming_the_line(text, message):
    with pytest.raises(HistoryError) as exc:
        list(read_values(text, "h.edn"))
    assert message in str(exc.value)


def test_one_value_and_where_it_ends():
    assert read_one("[3 0]", "f:2") == [3, 0]
    with pytest.raises(HistoryError, match="f:2: expected one value, found more: ':x'"):
        read_one("[3 0] :x", "f:2")
    with pytest.raises(HistoryError, match="f:2: expected a value, found nothing"):
        read_one("  ", "f:2")
    text = '{:k "a b"}   :timed-out'
    assert text[: first_value_end(text, "f")] == '{:k "a b"}'


_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False)
    | st.text()
    | st.decimals(allow_nan=False, allow_infinity=False)
    | st.fractions()
    | st.uuids()
    | st.datetimes(timezones=st.just(datetime.timezone.utc))
)
_values = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text() | st.integers(), inner, max_size=4)
        | st.frozensets(st.integers() | st.text(), max_size=4)
        | st.builds(Tagged, st.sampled_from(["object", "my/tag", "x.y.Z"]), inner)
    ),
    max_leaves=12,
)


@settings(max_examples=100, deadline=None, derandomize=True)
@given(_values)
def test_edn_text_reads_back_as_the_same_value(value):
    assert read_one(edn_text(value), "x") == value


def test_edn_text_writes_keys_as_keywords_and_other_strings_as_strings():
    assert (
        edn_text({"process": "nemesis", "a b": [None, True, 1.5]})
        == '{:process "nemesis", "a b" [nil true 1.5]}'
    )


#: Pieces of EDN and of what is not: arbitrary text made of them reads or is one HistoryError.
_PIECES = st.sampled_from(
    [
        *'{}[]()#_:;"\\ ,\n0123456789abxNMr/.-+^@~`!?*',
        "#inst",
        "#uuid",
        "\\u",
        "#:ns",
        "##Inf",
        '#"',
        "\\u00",
        "2r",
    ]
)


@settings(max_examples=500, deadline=None, derandomize=True)
@given(st.lists(_PIECES, max_size=30).map("".join))
def test_any_text_reads_or_is_one_error_naming_where(text):
    try:
        list(read_values(text, "h.edn"))
    except HistoryError as exc:
        assert str(exc).startswith("h.edn")
