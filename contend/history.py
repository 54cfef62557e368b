"""Operation records and the formats they are read from and written to.

A history is a list of `Record`s in the Jepsen convention: a client process
invokes an operation (`invoke`) and later learns its outcome: `ok` (it took
effect), `fail` (it did not) or `info` (it may or may not have: a timeout, a
lost connection). A process whose operation ended in `info` never invokes
again; a new process id takes its place. Nemesis events (process `nemesis`)
are kept beside the client operations.

Formats: JSONL (native, one record per line), Jepsen EDN maps (one per line,
or one vector of them) and jepsen.util log lines. `pair` turns records into
`Call`s, one per operation, with call and return times.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from contend.errors import ContendError
from models.base import UNKNOWN, Op

TYPES = ("invoke", "ok", "fail", "info")
COMPLETIONS = ("ok", "fail", "info")
NEMESIS = "nemesis"
FORMATS = ("jsonl", "edn", "log")


class HistoryError(ContendError):
    """A history file (or record sequence) is malformed; the message names the line."""


@dataclass(slots=True)
class Record:
    """One line of a history: an invocation or a completion.

    `time` is a monotonic time in ns (None when the source has none: then the
    order of records is the order of time); `index` the record's position.
    Treat it as immutable (not frozen only because frozen dataclasses are slow
    to build, and histories run to millions of records).
    """

    process: Any
    type: str
    f: str
    key: Any = None
    value: Any = None
    time: int | None = None
    index: int = -1
    error: Any = None
    line: int | None = field(default=None, compare=False, repr=False)

    def to_json(self) -> dict[str, Any]:
        """The JSONL object: None-valued optional fields are left out."""
        out: dict[str, Any] = {"index": self.index, "process": self.process, "type": self.type, "f": self.f}
        if self.key is not None:
            out["key"] = self.key
        out["value"] = _jsonable(self.value)
        if self.time is not None:
            out["time"] = self.time
        if self.error is not None:
            out["error"] = _jsonable(self.error)
        return out


@dataclass(slots=True)
class Call:
    """One operation: an invocation paired with its completion.

    `status` is "ok", "fail" or "info" (an invocation the history never
    completes counts as info). `output` is the completion's value, UNKNOWN for
    info. `end` is None when the operation never returned (info): it may take
    effect at any time after `start`, or never.
    """

    id: int
    process: Any
    f: str
    key: Any
    value: Any
    output: Any
    status: str
    start: int
    end: int | None
    invoke: Record
    completion: Record | None

    def op(self) -> Op:
        """The model's view: f, input, observed output (UNKNOWN for info), key, process."""
        return Op(self.f, self.value, self.output, self.key, self.process)

    def describe(self) -> str:
        """`process f(key, value) → output`, as a person reads it."""
        arg = show(self.value)
        if self.key is not None:
            arg = f"{show(self.key)}, {arg}" if self.value is not None else show(self.key)
        elif self.value is None:
            arg = ""
        out = {"ok": show(self.output), "fail": "fail", "info": "?"}[self.status]
        return f"p{self.process} {self.f}({arg}) → {out}"


# --------------------------------------------------------------------------- records


_TYPE_SET = frozenset(TYPES)


def make_record(fields: dict[str, Any], index: int, line: int | None, source: str) -> Record:
    """Validate one parsed record (its keys already plain strings); errors name `source` and `line`."""
    get = fields.get
    process, kind, f, time, idx = get("process"), get("type"), get("f"), get("time"), get("index", index)
    if (
        (type(process) is int or type(process) is str)
        and kind in _TYPE_SET
        and type(f) is str
        and (time is None or type(time) is int)
        and type(idx) is int
    ):
        return Record(process, kind, f, get("key"), get("value"), time, idx, get("error"), line)
    where = source if line is None else f"{source}:{line}"
    if process is None:
        raise HistoryError(f"{where}: expected a :process (an integer, or nemesis), found none")
    if isinstance(process, bool) or not isinstance(process, int | str):
        raise HistoryError(f"{where}: expected :process to be an integer or a name, got {process!r}")
    if kind not in TYPES:
        raise HistoryError(f"{where}: expected :type to be one of invoke, ok, fail, info; got {kind!r}")
    if not isinstance(f, str | int) or isinstance(f, bool):
        raise HistoryError(f"{where}: expected :f (the operation's name), got {f!r}")
    if time is not None and (isinstance(time, bool) or not isinstance(time, int | float)):
        raise HistoryError(f"{where}: expected :time to be a number of nanoseconds, got {time!r}")
    if not isinstance(idx, int) or isinstance(idx, bool):
        raise HistoryError(f"{where}: expected :index to be an integer, got {idx!r}")
    return Record(
        process,
        kind,
        str(f),
        get("key"),
        get("value"),
        None if time is None else int(time),
        idx,
        get("error"),
        line,
    )


# --------------------------------------------------------------------------- reading


def read_history(path: str | Path, fmt: str | None = None) -> list[Record]:
    """Read a history file; `fmt` is jsonl, edn or log, else guessed from the name and first line."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise HistoryError(f"cannot read history {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise HistoryError(f"{p}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    return parse_history(text, fmt or guess_format(p.name, text), source=str(p))


def guess_format(name: str, text: str) -> str:
    """jsonl, edn or log, from the file name's suffix, else from the first non-blank line."""
    lower = name.lower()
    for suffix, fmt in ((".jsonl", "jsonl"), (".ndjson", "jsonl"), (".json", "jsonl"), (".edn", "edn")):
        if lower.endswith(suffix):
            return fmt
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if "jepsen.util" in s:
            return "log"
        if s.startswith("{:") or s.startswith("[") or s.startswith("#"):
            return "edn"
        if s.startswith("{"):
            return "jsonl"
        break
    if lower.endswith(".log"):
        return "log"
    raise HistoryError(
        f"{name}: cannot tell the format: expected JSONL objects, EDN maps ({{:process 0, :type :invoke …}}) "
        "or jepsen.util log lines; pass the format explicitly"
    )


def parse_history(text: str, fmt: str, source: str = "<history>") -> list[Record]:
    """Parse `text` in format `fmt` (jsonl, edn, log)."""
    if fmt == "jsonl":
        return parse_jsonl(text, source)
    if fmt == "edn":
        return parse_edn(text, source)
    if fmt == "log":
        return parse_log(text, source)
    raise HistoryError(f"unknown history format {fmt!r}: expected one of {', '.join(FORMATS)}")


def parse_jsonl(text: str, source: str = "<jsonl>") -> list[Record]:
    """One JSON object per line; blank lines are skipped."""
    lines = text.splitlines()
    numbered = [(n, line) for n, line in enumerate(lines, 1) if line.strip()]
    try:
        # One decode of the whole file is several times faster than one per line.
        objects = json.loads("[" + ",".join(line for _, line in numbered) + "]")
    except json.JSONDecodeError:
        objects = None
    if objects is None or len(objects) != len(numbered):
        objects = []
        for lineno, line in numbered:
            try:
                objects.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise HistoryError(
                    f"{source}:{lineno}: expected a JSON object, but {exc.msg} (column {exc.colno})"
                ) from None
    records: list[Record] = []
    for (lineno, _), obj in zip(numbered, objects, strict=True):
        if not isinstance(obj, dict):
            raise HistoryError(f"{source}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        records.append(make_record(obj, len(records), lineno, source))
    return _finish(records, source)


def parse_edn(text: str, source: str = "<edn>") -> list[Record]:
    """EDN maps one per line (or a single vector of maps), as Jepsen writes histories."""
    reader = _EdnReader(text, source)
    records: list[Record] = []
    for lineno, value in reader.top_level():
        maps = value if isinstance(value, list) and reader.last_was_vector else [value]
        for m in maps:
            where = f"{source}:{lineno}"
            if not isinstance(m, dict):
                raise HistoryError(
                    f"{where}: expected an EDN map {{:process …, :type …, :f …}}, got {show(m)}"
                )
            fields = {_field_name(k): v for k, v in m.items()}
            records.append(make_record(fields, len(records), lineno, source))
    return _finish(records, source)


_LOG_LINE = re.compile(r"jepsen\.util\s*[-:]\s+(\S+)[\t ]+(.*)$")
_SPACED_OP = re.compile(r":(invoke|ok|fail|info)\s")


def parse_log(text: str, source: str = "<log>") -> list[Record]:
    """jepsen.util log lines: `INFO  jepsen.util - 3\\t:invoke\\t:cas\\t[3 0]`; other lines are skipped.

    Columns are tab-separated as jepsen.util writes them; logs whose tabs were
    turned into spaces (aligned with spaces) are read too, the value then being
    the first EDN value after the operation name.
    """
    records: list[Record] = []
    for lineno, line in enumerate(text.splitlines(), 1):
        m = _LOG_LINE.search(line.rstrip("\r\n"))
        if not m:
            continue
        where = f"{source}:{lineno}"
        proc_text, rest = m.group(1), m.group(2)
        if "\t" in rest:
            parts = rest.split("\t")
        elif _SPACED_OP.match(rest):
            parts = _space_columns(rest, where)
        else:
            continue  # jepsen.util's other messages ("Relative time begins now"), not an operation
        if len(parts) < 2:
            raise HistoryError(
                f"{where}: expected `process<TAB>:type<TAB>:f<TAB>value`, got {line.strip()[:80]!r}"
            )
        kind_text, f_text = parts[0].strip(), parts[1].strip()
        value_text = parts[2].strip() if len(parts) > 2 else "nil"
        error_text = "\t".join(parts[3:]).strip() if len(parts) > 3 else ""
        process: Any = _edn_scalar(proc_text, where, "a process (an integer or :nemesis)")
        if not kind_text.startswith(":") or kind_text[1:] not in TYPES:
            raise HistoryError(f"{where}: expected a type (:invoke, :ok, :fail or :info), got {kind_text!r}")
        if not f_text.startswith(":"):
            raise HistoryError(f"{where}: expected an operation name such as :read, got {f_text!r}")
        try:
            value = _EdnReader(value_text, where).single()
        except HistoryError as exc:
            reason = str(exc).removeprefix(f"{where}: ")
            raise HistoryError(f"{where}: expected an EDN value, got {value_text!r} ({reason})") from None
        error = None
        if error_text:
            try:
                error = _EdnReader(error_text, where).single()
            except HistoryError:
                error = error_text
        fields = {"process": process, "type": kind_text[1:], "f": f_text[1:], "value": value, "error": error}
        records.append(make_record(fields, len(records), lineno, source))
    if not records:
        raise HistoryError(
            f"{source}: expected jepsen.util log lines such as `INFO  jepsen.util - 3\\t:invoke\\t:read\\tnil`, found none"
        )
    return _finish(records, source)


def _space_columns(rest: str, where: str) -> list[str]:
    """`:type :f value error...` aligned with spaces, split into the columns tabs would give."""
    head = rest.split(None, 2)
    if len(head) < 3:
        return head
    try:
        cut = _EdnReader(head[2], where).first_value_end()
    except HistoryError as exc:
        reason = str(exc).removeprefix(f"{where}: ")
        raise HistoryError(f"{where}: expected an EDN value, got {head[2].strip()!r} ({reason})") from None
    return [head[0], head[1], head[2][:cut], head[2][cut:]]


def _finish(records: list[Record], source: str) -> list[Record]:
    if not records:
        raise HistoryError(f"{source}: the history is empty")
    return records


def _field_name(k: Any) -> str:
    return k if isinstance(k, str) else str(k)


def _edn_scalar(text: str, where: str, expected: str) -> Any:
    try:
        value = _EdnReader(text, where).single()
    except HistoryError:
        raise HistoryError(f"{where}: expected {expected}, got {text!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise HistoryError(f"{where}: expected {expected}, got {text!r}")
    return value


# --------------------------------------------------------------------------- EDN

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


class _EdnReader:
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


# --------------------------------------------------------------------------- writing


def dumps_jsonl(records: Iterable[Record]) -> str:
    """The native format: one JSON object per line."""
    return "".join(json.dumps(r.to_json(), separators=(",", ":")) + "\n" for r in records)


def write_jsonl(records: Iterable[Record], path: str | Path) -> None:
    """Write `records` to `path` as JSONL."""
    Path(path).write_text(dumps_jsonl(records), encoding="utf-8")


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple | list | set | frozenset):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    if v is UNKNOWN:
        return None
    return v


# --------------------------------------------------------------------------- pairing


@dataclass
class Paired:
    """A history split into client operations and nemesis events."""

    calls: list[Call]
    nemesis: list[Record]
    records: Sequence[Record]


def pair(records: Sequence[Record]) -> Paired:
    """Pair each invocation with its process's next completion.

    Times are the records' `time` when every record has one, else their
    positions (nemesis records then get their position as `time`). Errors
    name the line: a completion with no open invocation, an invocation while
    the process's previous one is open, an invocation by a process whose
    earlier operation ended in info.
    """
    timed = all(r.time is not None for r in records)
    open_: dict[Any, tuple[int, int, Record]] = {}
    crashed: dict[Any, Record] = {}
    slots: list[tuple[int, Record, int, Record | None]] = []
    nemesis: list[Record] = []
    for pos, r in enumerate(records):
        if r.process == NEMESIS:
            nemesis.append(r if timed else replace(r, time=pos))
            continue
        p = r.process
        if r.type == "invoke":
            if p in open_:
                prev = open_[p][2]
                raise HistoryError(
                    f"{_at(r)}: expected process {p} to complete its {prev.f} from {_at(prev)} "
                    f"before it invokes {r.f}"
                )
            if p in crashed:
                raise HistoryError(
                    f"{_at(r)}: process {p} invokes {r.f} after its {crashed[p].f} ended in info at "
                    f"{_at(crashed[p])}; expected a new process id (Jepsen's convention)"
                )
            open_[p] = (len(slots), pos, r)
            slots.append((pos, r, -1, None))
            continue
        if p not in open_:
            raise HistoryError(f"{_at(r)}: expected an invoke by process {p} before this :{r.type} of {r.f}")
        slot, inv_pos, inv = open_.pop(p)
        if inv.f != r.f:
            raise HistoryError(
                f"{_at(r)}: expected the completion of {inv.f} (invoked at {_at(inv)}), got {r.f}"
            )
        slots[slot] = (inv_pos, inv, pos, r)
        if r.type == "info":
            crashed[p] = r

    calls: list[Call] = []
    for inv_pos, inv, comp_pos, comp in slots:
        start = inv.time if timed and inv.time is not None else inv_pos
        status = comp.type if comp is not None else "info"
        end: int | None = None
        output: Any = UNKNOWN
        if comp is not None and status != "info":
            end = comp.time if timed and comp.time is not None else comp_pos
            output = comp.value
            if end < start:
                raise HistoryError(f"{_at(comp)}: completes at {end} ns, before its invocation at {start} ns")
        key = inv.key if inv.key is not None else (comp.key if comp is not None else None)
        calls.append(
            Call(len(calls), inv.process, inv.f, key, inv.value, output, status, start, end, inv, comp)
        )
    return Paired(calls, nemesis, records)


def _at(r: Record | None) -> str:
    if r is None:
        return "?"
    return f"line {r.line}" if r.line is not None else f"record {r.index}"


def show(v: Any, limit: int = 40) -> str:
    """A value as EDN-ish text (nil, [a b]), clipped to `limit` characters."""
    if v is UNKNOWN:
        return "?"
    if v is None:
        return "nil"
    text = repr(v) if not isinstance(v, str) else v
    if isinstance(v, list | tuple):
        text = "[" + " ".join(show(x, limit) for x in v) + "]"
    return text if len(text) <= limit else text[: limit - 1] + "…"
