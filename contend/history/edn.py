"""The EDN reader for Jepsen histories, and the EDN text of a value.

One reader serves every place EDN appears: history files (a bare sequence of
maps, or one vector or list of them, comments anywhere) and the values of
jepsen.util log lines. It reads all of EDN a history uses: keywords (plain
strings here, `:ns/name` as "ns/name"), namespaced maps (`#:ns{…}`), sets
(frozensets), `#inst` (datetime), `#uuid` (UUID), any other tag kept as a
`Tagged` value (`#object[…]` included), radix, big and exact numbers (`2r101`,
`1N`, `1.5M` as Decimal, `1/3` as Fraction, `##Inf`), `#"regex"` as a `Regex`
value, characters, and `#_` discard. Anything else is an error naming the line.

It is one regular expression walked once, with an explicit stack: no token
list and no recursion, so a 100,000-operation history reads at several MB/s.
"""

from __future__ import annotations

import datetime
import operator
import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

from contend.history.records import HistoryError
from contend.models.base import freeze

_NAME = r"""[^\s,\[\](){}"\\;]"""
#: One token (whitespace and commas around it dropped, a newline kept to count lines); the first
#: character says what it is. Every character but whitespace starts one, so none is skipped.
_TOKEN = re.compile(
    rf"""[ \t\r,]*(
      \n
    | [\[\](){{}}]
    | "[^"\\]*(?:\\.[^"\\]*)*"
    | \#(?:\{{|_|!.*|"[^"\\]*(?:\\.[^"\\]*)*"|{_NAME}*)
    | \\.{_NAME}*
    | ;.*
    | {_NAME}+
    | [^\s,]
    )""",
    re.VERBOSE,
)
_INTEGER = re.compile(
    r"([-+]?)(?:(0)|([1-9][0-9]*)|0[xX]([0-9A-Fa-f]+)|0([0-7]+)|([1-9][0-9]?)[rR]([0-9A-Za-z]+))(N)?$"
)
_FLOAT = re.compile(r"[-+]?[0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?M?$")
_RATIO = re.compile(r"([-+]?[0-9]+)/([0-9]+)$")
_INST = re.compile(
    r"(\d{4})(?:-(\d\d)(?:-(\d\d)(?:[Tt](\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?)?)?)?([Zz]|[-+]\d\d:\d\d)?$"
)
_CHARS = {"newline": "\n", "space": " ", "tab": "\t", "return": "\r", "backspace": "\b", "formfeed": "\f"}
_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}
_SYMBOLIC = {"##Inf": float("inf"), "##-Inf": float("-inf"), "##NaN": float("nan")}
_CLOSER = {"[": "]", "(": ")"}

# Frame kinds: collections, then prefixes that wait for the next value.
_VECTOR, _LIST, _MAP, _SET, _NS_MAP, _OUTER, _TAG, _DISCARD, _NAMESPACE = range(9)
_CLOSING = frozenset("}])")
_CLOSES = {_VECTOR: "]", _LIST: ")", _MAP: "}", _SET: "}", _NS_MAP: "}"}
#: Tokens whose value is known before any is read.
_ATOMS: dict[str, Any] = {"nil": None, "true": True, "false": False}


@dataclass(frozen=True)
class Tagged:
    """A tagged element whose tag this reader does not know (`#object[…]`, `#my/tag 3`): kept, as
    Clojure's reader keeps an unknown tag with `tagged-literal`."""

    tag: str
    value: Any

    def __repr__(self) -> str:
        return f"#{self.tag} {edn_text(self.value)}"


@dataclass(frozen=True)
class Regex:
    """A `#"…"` regular expression, kept as its source text (Java's syntax is not Python's)."""

    source: str

    def __repr__(self) -> str:
        return f'#"{self.source}"'


def read_values(text: str, source: str) -> Iterator[tuple[int, Any]]:
    """(line, value) of each value in a history file. A top-level vector or list is a history
    written as one collection: its elements come one by one, each with its own line."""
    return _Reader(text, source).values(outer=True)


def read_one(text: str, where: str) -> Any:
    """The one value in `text` (a field of a log line); errors say `where`."""
    reader = _Reader(text, where)
    values = reader.values(outer=False)
    first = next(values, None)
    if first is None:
        raise HistoryError(f"{where}: expected a value, found nothing")
    if next(values, None) is not None:
        rest = text[reader.end(1) :].strip()
        raise HistoryError(f"{where}: expected one value, found more: {rest[:40]!r}")
    return first[1]


def first_value_end(text: str, where: str) -> int:
    """Where in `text` its first value ends."""
    reader = _Reader(text, where)
    if next(reader.values(outer=False), None) is None:
        raise HistoryError(f"{where}: expected a value, found nothing")
    return reader.end(1)


class _Reader:
    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.line = 1
        #: Tokens read when each value was handed out.
        self.consumed: list[int] = []
        #: The line the collection last closed opened on.
        self.opened = 1

    def end(self, values: int) -> int:
        """Where in the text the first `values` values end."""
        count = self.consumed[values - 1]
        for k, m in enumerate(_TOKEN.finditer(self.text), 1):
            if k == count:
                return m.end()
        return len(self.text)

    def values(self, outer: bool) -> Iterator[tuple[int, Any]]:
        """(line, value) of each top-level value; with `outer`, of each element of a top-level
        vector or list instead of the collection."""
        tokens = _TOKEN.findall(self.text)
        remaining = iter(tokens)
        stack: list[list[Any]] = []  # frames: [kind, items or argument, line (, namespace)]
        items: list[Any] | None = None  # where the next value goes when the top frame is a collection
        atoms = dict(_ATOMS)  # symbols, keywords and numbers other than plain integers, read once
        line = 1
        for token in remaining:
            value = atoms.get(token, _NOTHING)
            if value is _NOTHING:
                first = token[0]
                if first == "\n":
                    line += 1
                    continue
                if first == "{" or first == "[" or first == "(":
                    if outer and not stack and first != "{":
                        stack.append([_OUTER, _CLOSER[first], line])
                        items = None
                    elif stack and stack[-1][0] == _NAMESPACE:
                        self.ns_map(stack, first, line)
                        items = None
                    else:
                        items = []
                        stack.append(
                            [_MAP if first == "{" else _VECTOR if first == "[" else _LIST, items, line]
                        )
                    continue
                if first == "}" or first == "]" or first == ")":
                    value = self.close(stack, first, line)
                    start = self.opened
                    items = _items_of(stack)
                    if value is _NOTHING:  # the end of an outer collection: its elements went already
                        continue
                elif first.isdigit() and (first != "0" or len(token) == 1) and token.isdigit():
                    value = int(token)
                elif first == '"':
                    if len(token) == 1:
                        self.fail(line, "an unterminated string")
                    if "\n" in token:
                        line += token.count("\n")
                    value = token[1:-1]
                    if "\\" in value:
                        value = self.unescape(value, line)
                elif first == ":":
                    if len(token) == 1:
                        self.fail(line, "expected a keyword name after ':'")
                    value = atoms[token] = token[1:]
                elif first == "#":
                    self.line = line
                    value = self.dispatch(stack, token)
                    line = self.line
                    if value is _NOTHING:  # a prefix that waits for the next value, or a comment
                        items = _items_of(stack)
                        continue
                elif first == ";":
                    continue
                elif first == "\\":
                    value = self.char(token, line)
                else:
                    value = atoms[token] = self.atom(token, line)
            if items is not None:
                items.append(value)
                continue
            # Not inside a plain collection: a prefix waits for this value, or it is handed out.
            named = token[0] == ":" or (type(value) is str and token[0] not in '"\\#')
            if token not in _CLOSING:
                start = line
            while True:
                if not stack:
                    self.consumed.append(len(tokens) - operator.length_hint(remaining))
                    yield start, value
                    break
                frame = stack[-1]
                top = frame[0]
                if top <= _SET:
                    frame[1].append(value)
                    break
                if top == _OUTER:
                    self.consumed.append(len(tokens) - operator.length_hint(remaining))
                    yield start, value
                    break
                if top == _NS_MAP:
                    if named and len(frame[1]) % 2 == 0:
                        value = _namespaced(frame[3], value)
                    frame[1].append(value)
                    break
                stack.pop()
                start = frame[2]
                if top == _DISCARD:
                    break
                if top == _NAMESPACE:
                    if not isinstance(value, dict) or token != "}":
                        self.fail(line, f"expected a map after #:{frame[1]}, got {edn_text(value)}")
                else:
                    value = self.tag(frame[1], value, line)
                named = False  # a finished value: a key of a #:ns map only if read as a keyword
            items = _items_of(stack)
        if stack:
            kind, argument, opened = stack[-1][:3]
            if kind >= _TAG:
                self.fail(opened, "expected a value, but the input ended")
            closer = argument if kind == _OUTER else _CLOSES[kind]
            self.fail(opened, f"expected {closer!r} to close what opens here")

    def ns_map(self, stack: list[list[Any]], opener: str, line: int) -> None:
        """Push the map of a `#:ns` prefix: its elements take the slow road, to namespace its keys."""
        if opener != "{":
            self.fail(line, f"expected a map after #:{stack[-1][1]}, got {opener!r}")
        stack.append([_NS_MAP, [], line, stack[-1][1]])

    def close(self, stack: list[list[Any]], closer: str, line: int) -> Any:
        """The collection `closer` ends, popped off `stack` (_NOTHING for an outer one)."""
        if not stack:
            self.fail(line, f"unexpected {closer!r}")
        kind, items, opened = stack.pop()[:3]
        self.opened = opened
        if kind >= _TAG:
            label = {_TAG: f"#{items}", _DISCARD: "#_", _NAMESPACE: f"#:{items}"}[kind]
            self.fail(line, f"expected a value after {label}, got {closer!r}")
        expected = items if kind == _OUTER else _CLOSES[kind]
        if closer != expected:
            where = "" if opened == line else f" (what opens at line {opened})"
            self.fail(line, f"expected {expected!r}, got {closer!r}{where}")
        if kind == _OUTER:
            return _NOTHING
        if kind in (_VECTOR, _LIST):
            return items
        if kind == _SET:
            try:
                return frozenset(items)
            except TypeError:
                return frozenset(freeze(x) for x in items)
        if len(items) % 2:
            self.fail(opened, "expected a map with key/value pairs, got an odd count")
        pairs = iter(items)
        try:
            return dict(zip(pairs, pairs, strict=True))
        except TypeError:
            pairs = iter(items)
            return {freeze(k): v for k, v in zip(pairs, pairs, strict=True)}

    def dispatch(self, stack: list[list[Any]], token: str) -> Any:
        """What `#…` reads as: a value (##Inf, a regex), or _NOTHING after pushing a set, a
        discard, a tag or a namespace onto `stack` (or for a #! comment)."""
        second = token[1:2]
        if second == "{":
            stack.append([_SET, [], self.line])
        elif second == "_":
            stack.append([_DISCARD, None, self.line])
        elif second == ":":
            if token[2:3] in ("", ":"):
                self.fail(self.line, "expected a namespace after #: (#::{…} is Clojure source, not EDN)")
            stack.append([_NAMESPACE, token[2:], self.line])
        elif second == "!":
            pass  # a comment to the end of the line, as the Clojure reader has it
        elif second == '"':
            self.line += token.count("\n")
            return Regex(token[2:-1])
        elif token in _SYMBOLIC:
            return _SYMBOLIC[token]
        elif second.isalpha():
            stack.append([_TAG, token[1:], self.line])
        else:
            self.fail(self.line, f"expected a tag, a set, #_ or a closed #\"regex\" after '#', got {token!r}")
        return _NOTHING

    def char(self, token: str, line: int) -> str:
        body = token[1:]
        if len(body) == 1:
            return body
        if body in _CHARS:
            return _CHARS[body]
        if re.fullmatch(r"u[0-9a-fA-F]{4}", body):
            return chr(int(body[1:], 16))
        if re.fullmatch(r"o[0-7]{1,3}", body):
            return chr(int(body[1:], 8))
        self.fail(line, f"expected a character such as \\a, \\newline or \\u00e9, got {token!r}")
        return ""

    def atom(self, token: str, line: int) -> Any:
        """A symbol, nil, true, false or a number other than a plain integer."""
        if token == "nil":
            return None
        if token == "true":
            return True
        if token == "false":
            return False
        first = token[0]
        if not (first.isdigit() or (first in "+-" and token[1:2].isdigit())):
            return token  # a symbol
        m = _INTEGER.match(token)
        if m:
            sign = -1 if m.group(1) == "-" else 1
            if m.group(2) or m.group(3):
                return sign * int(m.group(2) or m.group(3))
            if m.group(4):
                return sign * int(m.group(4), 16)
            if m.group(5):
                return sign * int(m.group(5), 8)
            radix = int(m.group(6))
            try:
                if not 2 <= radix <= 36:
                    raise ValueError
                return sign * int(m.group(7), radix)
            except ValueError:
                self.fail(line, f"expected a number, got {token!r} (radix {radix})")
        if _FLOAT.match(token):
            if token.endswith("M"):
                try:
                    return Decimal(token[:-1])
                except InvalidOperation:
                    self.fail(line, f"expected a number, got {token!r}")
            return float(token)
        m = _RATIO.match(token)
        if m and int(m.group(2)):
            return Fraction(int(m.group(1)), int(m.group(2)))
        self.fail(line, f"expected a number, got {token!r}")

    def tag(self, tag: str, value: Any, line: int) -> Any:
        """`#inst "…"` a datetime, `#uuid "…"` a UUID, any other tag a Tagged value."""
        if tag == "inst":
            moment = _instant(value) if isinstance(value, str) else None
            if moment is None:
                self.fail(line, f'expected #inst "an RFC 3339 time", got {edn_text(value)}')
            return moment
        if tag == "uuid":
            try:
                return uuid.UUID(value)
            except (TypeError, ValueError, AttributeError):
                self.fail(line, f'expected #uuid "a UUID", got {edn_text(value)}')
        return Tagged(tag, value)

    def unescape(self, body: str, line: int) -> str:
        """A string's body with its escapes read (a newline, a quote, \\u00e9, octal \\101)."""
        out: list[str] = []
        i = 0
        while i < len(body):
            c = body[i]
            if c != "\\":
                out.append(c)
                i += 1
                continue
            nxt = body[i + 1]
            if nxt == "u":
                digits = body[i + 2 : i + 6]
                if not re.fullmatch(r"[0-9a-fA-F]{4}", digits):
                    self.fail(line, f"expected four hex digits after \\u in a string, got {digits!r}")
                out.append(chr(int(digits, 16)))
                i += 6
            elif nxt in "01234567":
                octal = re.match(r"[0-7]{1,3}", body[i + 1 :])
                assert octal is not None
                out.append(chr(int(octal.group(), 8)))
                i += 1 + len(octal.group())
            else:
                out.append(_ESCAPES.get(nxt, nxt))
                i += 2
        return "".join(out)

    def fail(self, line: int, message: str) -> Any:
        where = f"{self.source}:{line}" if "\n" in self.text else self.source
        raise HistoryError(f"{where}: {message}")


#: No value: what a discard, a prefix and the end of an outer collection produce.
_NOTHING: Any = object()


def _items_of(stack: list[list[Any]]) -> list[Any] | None:
    """The list the next value is appended to, when the innermost frame is a plain collection."""
    if stack and stack[-1][0] <= _SET:
        items: list[Any] = stack[-1][1]
        return items
    return None


def _namespaced(namespace: str, key: str) -> str:
    """A key of `#:ns{…}`: `a` is `ns/a`, `_/a` is `a`, `other/a` stays."""
    if "/" not in key or key == "/":
        return f"{namespace}/{key}"
    return key[2:] if key.startswith("_/") else key


def _instant(text: str) -> datetime.datetime | None:
    """An RFC 3339 time as #inst has it (parts may be left off from the right), or None."""
    m = _INST.match(text)
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, zone = m.groups()
    try:
        moment = datetime.datetime(
            int(year),
            int(month or 1),
            int(day or 1),
            int(hour or 0),
            int(minute or 0),
            int(second or 0),
            int((fraction or "0")[:6].ljust(6, "0")),
        )
    except ValueError:
        return None
    if zone is None or zone in "Zz":
        return moment.replace(tzinfo=datetime.timezone.utc)
    sign = -1 if zone[0] == "-" else 1
    offset = datetime.timedelta(hours=int(zone[1:3]), minutes=int(zone[4:6]))
    return moment.replace(tzinfo=datetime.timezone(sign * offset))


# --------------------------------------------------------------------------- writing

_KEYWORD_NAME = re.compile(r"[A-Za-z*+!_?<>=.-][A-Za-z0-9*+!_?<>=.:#/-]*$")


def edn_text(value: Any, keyword: bool = False) -> str:
    """`value` as EDN; a string as a keyword when `keyword` and it can be one (map keys are)."""
    if value is None:
        return "nil"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, str):
        if keyword and _KEYWORD_NAME.match(value):
            return ":" + value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value != value:
            return "##NaN"
        if value in (float("inf"), float("-inf")):
            return "##Inf" if value > 0 else "##-Inf"
        return repr(value)
    if isinstance(value, Decimal):
        return f"{value}M"
    if isinstance(value, Fraction):
        return f"{value.numerator}/{value.denominator}"
    if isinstance(value, list | tuple):
        return "[" + " ".join(edn_text(x) for x in value) + "]"
    if isinstance(value, set | frozenset):
        return "#{" + " ".join(sorted(edn_text(x) for x in value)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{edn_text(k, True)} {edn_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, datetime.datetime):
        return f'#inst "{value.isoformat()}"'
    if isinstance(value, uuid.UUID):
        return f'#uuid "{value}"'
    return repr(value)  # Tagged and Regex print as EDN
