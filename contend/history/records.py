"""Operation records, paired into calls.

A history is a list of `Record`s in the Jepsen convention: a client process
invokes an operation (`invoke`) and later learns its outcome: `ok` (it took
effect), `fail` (it did not) or `info` (it may or may not have: a timeout, a
lost connection). A process whose operation ended in `info` never invokes
again; a new process id takes its place. Nemesis events (process `nemesis`)
are kept beside the client operations.

`pair` turns records into `Call`s, one per operation, with call and return
times. The files they are read from and written to: `contend.history.formats`.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from contend.errors import ContendError
from contend.models.base import UNKNOWN, Op

TYPES = ("invoke", "ok", "fail", "info")
COMPLETIONS = ("ok", "fail", "info")
NEMESIS = "nemesis"
FORMATS = ("jsonl", "edn", "log")
#: The error of an operation recorded as fail because nothing of it reached the server starts with this.
UNSENT = "unsent: "


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

    def where(self) -> str:
        """`line N` of its invocation in the file read, else `record N`."""
        return _at(self.invoke)

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
    if time is not None and (
        isinstance(time, bool)
        or not isinstance(time, int | float)
        or (isinstance(time, float) and not time.is_integer())
    ):
        raise HistoryError(f"{where}: expected :time to be a whole number of nanoseconds, got {time!r}")
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


def _jsonable(v: Any) -> Any:
    if isinstance(v, tuple | list):
        return [_jsonable(x) for x in v]
    if isinstance(v, set | frozenset):  # JSON has no set: a list, in an order that does not vary
        return sorted((_jsonable(x) for x in v), key=repr)
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

    Times are the records' `time` when every client record has one (the
    records are then taken in time order, whatever their order in the file; a
    nemesis record without one takes the time of the record before it), else
    their positions (nemesis records then get their position as `time`).
    Errors name the line: times on some client records but not all, a
    completion with no open invocation, an invocation while the process's
    previous one is open, an invocation by a process whose earlier operation
    ended in info.
    """
    given = records
    timed = _timed(records)
    if timed:
        times: list[int] = []
        last = 0
        for r in records:
            last = r.time if r.time is not None else last
            times.append(last)
        if any(r.time is None for r in records):
            records = [
                r if r.time is not None else replace(r, time=t) for r, t in zip(records, times, strict=True)
            ]
        if any(a > b for a, b in itertools.pairwise(times)):
            records = [records[k] for k in sorted(range(len(records)), key=times.__getitem__)]
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
            hint = " (records are taken in time order: is its time before its invocation's?)" if timed else ""
            raise HistoryError(
                f"{_at(r)}: expected an invoke by process {p} before this :{r.type} of {r.f}{hint}"
            )
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
    return Paired(calls, nemesis, given)


def outcomes(calls: Sequence[Call]) -> dict[str, int]:
    """How the calls ended: ok (took effect), failed (did not), info (may have), pending (never
    completed: may have, as Jepsen's and Porcupine's checkers read it)."""
    counts = {"ok": 0, "failed": 0, "info": 0, "pending": 0}
    for c in calls:
        counts["failed" if c.status == "fail" else "pending" if c.completion is None else c.status] += 1
    return counts


def took_no_effect(calls: Sequence[Call]) -> str:
    """`1 pending, 6 failed`: how the calls that did not surely take effect ended."""
    counts = outcomes(calls)
    names = {"pending": "pending", "info": "ended in info", "failed": "failed"}
    return ", ".join(f"{counts[k]} {name}" for k, name in names.items() if counts[k])


def _timed(records: Sequence[Record]) -> bool:
    """Do the client records carry times? All or none of them must (HistoryError otherwise)."""
    with_time = without = None
    for r in records:
        if r.process == NEMESIS:
            continue
        if r.time is None:
            without = without or r
        else:
            with_time = with_time or r
        if with_time is not None and without is not None:
            raise HistoryError(
                f"{_at(without)}: no time, but {_at(with_time)} has one: give every record a time "
                "(nanoseconds) or none (then line order is time order)"
            )
    return with_time is not None


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
    elif isinstance(v, set | frozenset):
        text = "#{" + " ".join(sorted(show(x, limit) for x in v)) + "}"
    return text if len(text) <= limit else text[: limit - 1] + "…"
