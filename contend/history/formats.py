"""Reading and writing histories: JSONL (native, one record per line), Jepsen EDN maps (one per
line, or one vector of them) and jepsen.util log lines."""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from decimal import Decimal
from fractions import Fraction
from importlib import resources
from pathlib import Path
from typing import Any

import fastjsonschema

from contend.history.edn import Tagged, edn_text, first_value_end, read_one, read_values
from contend.history.records import FORMATS, TYPES, HistoryError, Record, make_record, show

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
    """jsonl, edn or log, from the file name's suffix, else from the first line that is neither
    blank nor an EDN comment (a blank file is an empty history in any format)."""
    lower = name.lower()
    for suffix, fmt in ((".jsonl", "jsonl"), (".ndjson", "jsonl"), (".json", "jsonl"), (".edn", "edn")):
        if lower.endswith(suffix):
            return fmt
    edn_comment = False
    for line in text.splitlines():
        s = line.strip()
        if not s:
            continue
        if "jepsen.util" in s:
            return "log"
        if s.startswith(";"):
            edn_comment = True
            continue
        if re.match(r"\{\s*:|[\[(#]", s):
            return "edn"
        if s.startswith("{"):
            return "jsonl"
        break
    if lower.endswith(".log"):
        return "log"
    if edn_comment:
        return "edn"
    if not text.strip():
        return "jsonl"
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
        # One decode of the whole file is several times faster than one per line. Joined with
        # "\n,", a value split across lines cannot decode (a raw newline is not allowed in a
        # string, a comma not inside a value), so as many values as lines means one per line.
        objects = json.loads("[" + "\n,".join(line for _, line in numbered) + "]")
    except json.JSONDecodeError:
        objects = None
    if objects is None or len(objects) != len(numbered):
        objects = []
        for lineno, line in numbered:
            try:
                objects.append(json.loads(line))
            except json.JSONDecodeError as exc:
                hint = (
                    "; JSONL is one JSON object per line, not one JSON array"
                    if numbered and numbered[0][1].lstrip().startswith("[")
                    else ""
                )
                raise HistoryError(
                    f"{source}:{lineno}: expected a JSON object, but {exc.msg} (column {exc.colno}){hint}"
                ) from None
    records: list[Record] = []
    validate = record_validator()
    for (lineno, _), obj in zip(numbered, objects, strict=True):
        if not isinstance(obj, dict):
            hint = "; JSONL is one JSON object per line, not one JSON array" if isinstance(obj, list) else ""
            raise HistoryError(f"{source}:{lineno}: expected a JSON object, got {type(obj).__name__}{hint}")
        try:
            validate(obj)
        except fastjsonschema.JsonSchemaValueException as exc:
            raise HistoryError(f"{source}:{lineno}: {_schema_message(exc)}") from None
        records.append(make_record(obj, len(records), lineno, source))
    return records


#: The JSON Schema of one JSONL record (documented in docs/HISTORY.md).
SCHEMA_FILE = "history.schema.json"


def record_schema() -> dict[str, Any]:
    """The JSON Schema every line of a JSONL history is validated against."""
    text = resources.files("contend.history").joinpath(SCHEMA_FILE).read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


@functools.cache
def record_validator() -> Callable[[Any], Any]:
    """The schema compiled once (fastjsonschema: about 2 µs a record)."""
    validate: Callable[[Any], Any] = fastjsonschema.compile(record_schema())
    return validate


def _schema_message(exc: fastjsonschema.JsonSchemaValueException) -> str:
    """`data.process must be integer or string` → `process must be integer or string, got 1.5 (…)`."""
    message = exc.message
    if message.startswith("data."):
        message = message[len("data.") :]
        message += f", got {json.dumps(exc.value)}"
    elif message.startswith("data "):
        message = "the record " + message[len("data ") :]
    return f"{message} (the record format: docs/HISTORY.md, schema contend/history/{SCHEMA_FILE})"


def parse_edn(text: str, source: str = "<edn>") -> list[Record]:
    """EDN maps one after another (Jepsen's history.edn), or one vector or list of them."""
    records: list[Record] = []
    for lineno, m in read_values(text, source):
        if type(m) is not dict:
            if isinstance(m, Tagged) and isinstance(m.value, dict):
                m = m.value  # a record literal, #some.Op{:process …}
            else:
                raise HistoryError(
                    f"{source}:{lineno}: expected an EDN map {{:process …, :type …, :f …}}, got {show(m)}"
                )
        records.append(make_record(m, len(records), lineno, source))
    return records


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
            value = read_one(value_text, where)
        except HistoryError as exc:
            reason = str(exc).removeprefix(f"{where}: ")
            raise HistoryError(f"{where}: expected an EDN value, got {value_text!r} ({reason})") from None
        error = None
        if error_text:
            try:
                error = read_one(error_text, where)
            except HistoryError:
                error = error_text
        fields = {"process": process, "type": kind_text[1:], "f": f_text[1:], "value": value, "error": error}
        records.append(make_record(fields, len(records), lineno, source))
    if not records and text.strip() and "jepsen.util" not in text:  # not a Jepsen log at all
        raise HistoryError(
            f"{source}: expected jepsen.util log lines such as `INFO  jepsen.util - 3\\t:invoke\\t:read\\tnil`, found none"
        )
    return records


def _space_columns(rest: str, where: str) -> list[str]:
    """`:type :f value error...` aligned with spaces, split into the columns tabs would give."""
    head = rest.split(None, 2)
    if len(head) < 3:
        return head
    try:
        cut = first_value_end(head[2], where)
    except HistoryError as exc:
        reason = str(exc).removeprefix(f"{where}: ")
        raise HistoryError(f"{where}: expected an EDN value, got {head[2].strip()!r} ({reason})") from None
    return [head[0], head[1], head[2][:cut], head[2][cut:]]


def _edn_scalar(text: str, where: str, expected: str) -> Any:
    try:
        value = read_one(text, where)
    except HistoryError:
        raise HistoryError(f"{where}: expected {expected}, got {text!r}") from None
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise HistoryError(f"{where}: expected {expected}, got {text!r}")
    return value


# --------------------------------------------------------------------------- writing


def dumps_jsonl(records: Iterable[Record]) -> str:
    """The native format: one JSON object per line. Values JSON has no type for are written as
    numbers (exact and big decimals, ratios) or as their EDN text (#inst, #uuid, tagged values)."""
    return "".join(
        json.dumps(r.to_json(), separators=(",", ":"), default=_json_default) + "\n" for r in records
    )


def _json_default(value: Any) -> Any:
    return float(value) if isinstance(value, Decimal | Fraction) else edn_text(value)


def write_jsonl(records: Iterable[Record], path: str | Path) -> None:
    """Write `records` to `path` as JSONL."""
    Path(path).write_text(dumps_jsonl(records), encoding="utf-8")
