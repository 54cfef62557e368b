"""Which operation of a stress run each command in the server's record belongs to.

A stress run has no scheduler to mark each round trip; its workers mark the
stream themselves (contend.stress.bank_worker): each connection first sends
`ECHO contend-conn:<process>`, each operation first sends
`ECHO contend-op:<process>:<n>`. Reading the record (contend.stress.monitor's
file) in the server's order:

* a command from a connection that named its process belongs to that
  process's operation whose marker came last (a process runs one operation at
  a time and waits for each reply, so its commands after marker n and before
  marker n + 1 are operation n's; after an info the process is never used
  again, so what its old connections still run stays with that operation);
* a command a script ran (client `lua`) belongs to the operation of the EVAL,
  EVALSHA or FCALL line before it; a MULTI/EXEC block shows as the server ran
  it, at EXEC, with its connection's address;
* the harness's probe script (`EVAL "return redis.call('ECHO', ...)"`, run once before the
  opening) says whether this server shows the commands scripts run;
* commands of connections that named no process (the harness's) belong to no
  operation, except those between the opening markers (`contend-open:<account>`,
  closed by `contend-open:`), which say which keys each account has;
* at a cut of the record (`#cut start end`), every process's current operation
  is forgotten until its next marker: what ran unseen cannot be placed, and
  the operations in flight during the cut are set aside by the judge.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from contend.servers.record import Ran, parse_line
from contend.stress.bank_worker import CONN_PREFIX, OP_PREFIX, OPEN_PREFIX, SCRIPT_PROBE

#: An operation of a stress run: (process, its n-th operation from 0).
OpId = tuple[int, int]


@dataclass
class Attribution:
    """The record read: each operation's commands with their positions in the server's order, each
    account's opening commands, and the cuts."""

    ops: dict[OpId, list[tuple[int, Ran]]] = field(default_factory=dict)
    #: The commands the harness ran to open each account (in order).
    opening: dict[str, list[Ran]] = field(default_factory=dict)
    #: (start, end) of each cut, monotonic ns; end 0: the record never came back.
    cuts: list[tuple[int, int]] = field(default_factory=list)
    #: Commands of connections that named no process (outside the opening), and commands a
    #: process ran after a cut before its next marker: placed in no operation.
    unplaced: int = 0
    lines: int = 0
    #: Does this server show the commands a script runs (the harness's probe script was seen)?
    shows_scripts: bool = False


def _marker(ran: Ran) -> str | None:
    if ran.args[0].upper() == "ECHO" and len(ran.args) == 2 and ran.args[1].startswith("contend-"):
        return ran.args[1]
    return None


def attribute(lines: Iterable[bytes]) -> Attribution:
    """Sort the record's lines (in the server's order) to the operations that ran them."""
    out = Attribution()
    process_of: dict[str, int] = {}  # connection address -> process
    current: dict[int, int] = {}  # process -> its operation now (n)
    opening: str | None = None
    last: OpId | None = None  # the operation of the last command a connection sent (for `lua`)
    for raw in lines:
        if raw.startswith(b"#cut "):
            _, start, end = raw.split()
            out.cuts.append((int(start), int(end)))
            current.clear()
            last = None
            continue
        ran = parse_line(raw)
        if ran is None:
            continue
        out.lines += 1
        position = out.lines
        if ran.by_script:
            if ran.args[1:] == (SCRIPT_PROBE,):
                out.shows_scripts = True
            elif last is not None:
                out.ops.setdefault(last, []).append((position, ran))
            elif opening:
                out.opening[opening].append(ran)
            else:
                out.unplaced += 1
            continue
        last = None
        marker = _marker(ran)
        if marker is not None:
            if marker.startswith(CONN_PREFIX):
                process_of[ran.client] = int(marker[len(CONN_PREFIX) :])
            elif marker.startswith(OP_PREFIX):
                who, n = (int(x) for x in marker[len(OP_PREFIX) :].split(":"))
                if n >= current.get(who, -1):  # a marker whose reply timed out may run late
                    current[who] = n
                process_of[ran.client] = who
            elif marker.startswith(OPEN_PREFIX):
                opening = marker[len(OPEN_PREFIX) :] or None
                if opening:
                    out.opening[opening] = []
            continue
        process = process_of.get(ran.client)
        if process is not None and process in current:
            last = (process, current[process])
            out.ops.setdefault(last, []).append((position, ran))
        elif process is None and opening:
            out.opening[opening].append(ran)
        else:
            out.unplaced += 1
    return out


def read_record(path: Path) -> Attribution:
    """The record kept in `path` (contend.stress.monitor's file), attributed."""
    with path.open("rb") as f:
        data = f.read()
    return attribute(data.split(b"\r\n"))
