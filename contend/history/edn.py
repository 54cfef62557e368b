"""A small EDN reader for Jepsen histories: maps, vectors, lists, sets, keywords (as plain strings), tags ignored."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from contend.history.records import HistoryError

_EDN_TOKEN = re.compile(
    r"""
    (?P<ws>[\s,]+|;[^\n]*)
  | (?P<str>"(?:[^"\\]|\\.)*")
  | (?P<open>\#\{|[\[({])
  | (?P<close>[\])}])
  | (?P<discard>\#_)
  | (?P<tag>\#[A-Za-z][^\s,\[\](){}"]*)
  | (?P<char>\\(?:newline|space|tab|return|u[0-9a-fA-F]{4}|.))
  | (?P<atom>[^\s,\[\](){}"\\;]+)
    """,
    re.VERBOSE | re.DOTALL,
)
_INT = re.compile(r"[+-]?\d+N?$")
_FLOAT = re.compile(r"[+-]?\d+(\.\d*)?([eE][+-]?\d+)?M?$")
_CHARS = {"newline": "\n", "space": " ", "tab": "\t", "return": "\r"}
_CLOSERS = {"[": "]", "(": ")", "{": "}", "#{": "}"}


class EdnReader:
    """A small EDN reader: maps, vectors, lists, sets, keywords (as plain strings), tags ignored."""

    def __init__(self, text: str, source: str) -> None:
        self.text = text
        self.source = source
        self.ends: list[int] = []  # where each token ends in `text`
        self.tokens = self._tokenize()
        self.pos = 0
        self.last_was_vector = False

    def _tokenize(self) -> list[tuple[str, str, int]]:
        out: list[tuple[str, str, int]] = []
        line, pos, text = 1, 0, self.text
        while pos < len(text):
            m = _EDN_TOKEN.match(text, pos)
            if not m:
                what = "an unterminated string" if text[pos] == '"' else f"unexpected character {text[pos]!r}"
                raise HistoryError(f"{self._where(line)}: {what}")
            kind = m.lastgroup or ""
            tok = m.group()
            if kind != "ws":
                out.append((kind, tok, line))
                self.ends.append(m.end())
            line += tok.count("\n")
            pos = m.end()
        return out

    def _where(self, line: int) -> str:
        return f"{self.source}:{line}" if "\n" in self.text else self.source

    def top_level(self) -> Iterator[tuple[int, Any]]:
        while self.pos < len(self.tokens):
            line = self.tokens[self.pos][2]
            self.last_was_vector = self.tokens[self.pos][1] == "["
            yield line, self._value()

    def first_value_end(self) -> int:
        """Read the first value; where in the text it ends."""
        self._value()
        return self.ends[self.pos - 1]

    def single(self) -> Any:
        if not self.tokens:
            raise HistoryError(f"{self.source}: expected a value, found nothing")
        value = self._value()
        if self.pos != len(self.tokens):
            raise HistoryError(f"{self.source}: expected one value, found more: {self.tokens[self.pos][1]!r}")
        return value

    def _value(self) -> Any:
        if self.pos >= len(self.tokens):
            last = self.tokens[-1][2] if self.tokens else 1
            raise HistoryError(f"{self._where(last)}: expected a value, but the input ended")
        kind, tok, line = self.tokens[self.pos]
        self.pos += 1
        if kind == "open":
            items = self._until(_CLOSERS[tok], line)
            if tok == "{":
                if len(items) % 2:
                    raise HistoryError(
                        f"{self._where(line)}: expected a map with key/value pairs, got an odd count"
                    )
                return {_hashable(items[i]): items[i + 1] for i in range(0, len(items), 2)}
            return items
        if kind == "close":
            raise HistoryError(f"{self._where(line)}: unexpected {tok!r}")
        if kind == "str":
            return _edn_string(tok[1:-1])
        if kind == "discard":
            self._value()
            return self._value()
        if kind == "tag":
            return self._value()
        if kind == "char":
            body = tok[1:]
            if body in _CHARS:
                return _CHARS[body]
            return chr(int(body[1:], 16)) if len(body) == 5 and body[0] == "u" else body
        return _edn_atom(tok, self._where(line))

    def _until(self, closer: str, line: int) -> list[Any]:
        items: list[Any] = []
        while True:
            if self.pos >= len(self.tokens):
                raise HistoryError(f"{self._where(line)}: expected {closer!r} to close what opens here")
            kind, tok, _ = self.tokens[self.pos]
            if kind == "close":
                self.pos += 1
                if tok != closer:
                    raise HistoryError(f"{self._where(line)}: expected {closer!r}, got {tok!r}")
                return items
            if kind == "discard":
                self.pos += 1
                self._value()
                continue
            items.append(self._value())


def _edn_atom(tok: str, where: str) -> Any:
    if tok == "nil":
        return None
    if tok == "true":
        return True
    if tok == "false":
        return False
    if tok.startswith(":"):
        if len(tok) == 1:
            raise HistoryError(f"{where}: expected a keyword name after ':'")
        return tok[1:]
    if _INT.match(tok):
        return int(tok.rstrip("N"))
    if _FLOAT.match(tok):
        return float(tok.rstrip("M"))
    if re.match(r"[+-]?\d+/\d+$", tok):
        num, den = tok.split("/")
        return int(num) / int(den)
    if re.match(r"[+-]?0[xX][0-9a-fA-F]+N?$", tok):  # Clojure prints hex ints (object ids in #object[…])
        return int(tok.rstrip("N"), 16)
    if tok[0].isdigit():
        raise HistoryError(f"{where}: expected a number, got {tok!r}")
    return tok  # a symbol


_ESCAPES = {'"': '"', "\\": "\\", "n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f"}


def _edn_string(body: str) -> str:
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            nxt = body[i + 1]
            if nxt == "u" and i + 5 < len(body) + 1:
                out.append(chr(int(body[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _hashable(v: Any) -> Any:
    if isinstance(v, list):
        return tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return tuple(sorted((repr(k), _hashable(x)) for k, x in v.items()))
    return v
