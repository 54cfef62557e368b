"""What a server ran, in the order it ran it: its MONITOR stream, read up to markers the harness sends.

The conflict graph of a transaction example needs the commands the server executed, not the ones
the client sent: a script's reads and writes are the commands it ran, and a MULTI/EXEC block ran
only if EXEC ran it. The mechanism is MONITOR, for these reasons:

* it shows every command the server executed, from every connection, in the order it ran them;
  on Redis 6.2 and Valkey the commands a script runs follow its EVAL/EVALSHA/FCALL line (their
  client is `lua`), and a MULTI/EXEC block's commands are printed when EXEC runs them (an EXEC
  that a WATCH aborted prints MULTI and EXEC alone);
* the alternatives each miss something the graph needs: keyspace notifications carry writes only
  (no reads), arrive on Pub/Sub after the fact and say nothing of scripts; the SLOWLOG (threshold 0)
  is capped and shows a script as its EVAL; CLIENT TRACKING sees reads of one connection; a module
  would have to be loaded into the server.

Its cost is the server formatting each command for the monitor connection, and the reading here
(measured as seconds per example: `TransactionMachine.record_seconds`). Only servers contend starts
are monitored (an embedded server): on one given by --redis-url, MONITOR would slow a server that
is not ours and may be refused by its ACLs; a Redis Cluster has one stream per node, not merged
here. There, the commands the client sent (the scheduler's trace) stand in.

Markers divide the stream: the harness's own connection sends `ECHO <marker>` before and after
each round trip it lets a client make, and what lies between two markers is what that round trip
ran. Each marker waits for its reply: the server reads its connections in an order of its own, so
a marker merely sent could be run after the next round trip of a client. Whether this server
prints the commands a script runs is probed once when the record opens (`shows_scripts`).
"""

from __future__ import annotations

import contextlib
import re
import secrets
import socket
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import redis

#: How long a read waits for a marker before the record counts as broken.
READ_TIMEOUT = 10.0


class RecordBroken(Exception):
    """The server's record stopped (its connection closed, or a marker never came back)."""


@dataclass(frozen=True)
class Ran:
    """One command the server executed: its database, the client that sent it ("lua" for a command a
    script ran; host:port of a connection otherwise) and its arguments, the command name first."""

    db: int
    client: str
    args: tuple[str, ...]

    @property
    def by_script(self) -> bool:
        return self.client == "lua"


#: A monitor line: `+<time> [<db> <client>] "arg" "arg" ...`.
_LINE = re.compile(rb"^\+?\d+\.\d+ \[(\d+) ([^\]]*)\] (.*)$", re.S)
_ARG = re.compile(rb'"((?:[^"\\]|\\.)*)"', re.S)
_ESCAPE = re.compile(rb"\\(x[0-9a-fA-F]{2}|.)", re.S)
_SIMPLE = {b"n": b"\n", b"r": b"\r", b"t": b"\t", b"a": b"\a", b"b": b"\b", b'"': b'"', b"\\": b"\\"}


def _unescape(raw: bytes) -> str:
    """An argument as the server quoted it (sdscatrepr) back to the string the client sent."""
    if b"\\" in raw:
        raw = _ESCAPE.sub(lambda m: bytes([int(m.group(1)[1:], 16)]) if len(m.group(1)) == 3
                          else _SIMPLE.get(m.group(1), m.group(1)), raw)  # fmt: skip
    return raw.decode("utf-8", errors="replace")


def parse_line(line: bytes) -> Ran | None:
    """A monitor line as a `Ran` (None for what is not one: the +OK that starts the stream)."""
    found = _LINE.match(line)
    if found is None:
        return None
    args = tuple(_unescape(a) for a in _ARG.findall(found.group(3)))
    if not args:
        return None
    return Ran(int(found.group(1)), found.group(2).decode(errors="replace"), args)


def _whole_reply(data: bytes) -> bool:
    """Does `data` hold one whole reply (a simple string, an error, or a bulk string)?"""
    if data[:1] in (b"+", b"-", b":"):
        return data.endswith(b"\r\n")
    if data[:1] == b"$":
        head, sep, rest = data.partition(b"\r\n")
        return bool(sep) and (int(head[1:]) < 0 or len(rest) >= int(head[1:]) + 2)
    return False


def _resp(*args: str) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class ServerRecord:
    """The MONITOR stream of one server and a connection that sends markers into it."""

    def __init__(self, url: str) -> None:
        params = redis.connection.parse_url(url)
        self.url = url
        self.host = str(params.get("host", "127.0.0.1"))
        self.port = int(params.get("port", 6379))
        self._auth = [a for a in (params.get("username"), params.get("password")) if a]
        self.token = secrets.token_hex(4)
        self._next = 0
        self._buffer = b""
        self._monitor = self._connect()
        self._monitor.sendall(_resp("MONITOR"))
        self._expect_ok()
        self._marker = self._connect()
        self._replies = b""
        #: Does this server print the commands a script runs (after its EVAL)?
        self.shows_scripts = self._probe_scripts()

    def _connect(self) -> socket.socket:
        sock = socket.create_connection((self.host, self.port), timeout=5)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if self._auth:
            sock.sendall(_resp("AUTH", *self._auth))
            if not sock.recv(1024).startswith(b"+OK"):
                raise RecordBroken(f"the server at {self.host}:{self.port} refused AUTH")
        return sock

    def _expect_ok(self) -> None:
        line = self._read_line()
        if not line.startswith(b"+OK"):
            raise RecordBroken(f"MONITOR refused: {line.decode(errors='replace')}")

    def _read_line(self) -> bytes:
        deadline = time.monotonic() + READ_TIMEOUT
        while b"\r\n" not in self._buffer:
            self._fill(deadline)
        line, _, self._buffer = self._buffer.partition(b"\r\n")
        return line

    def _fill(self, deadline: float) -> None:
        left = deadline - time.monotonic()
        if left <= 0:
            raise RecordBroken(
                f"the record of {self.host}:{self.port} stopped: no marker in {READ_TIMEOUT} s"
            )
        self._monitor.settimeout(left)
        try:
            data = self._monitor.recv(1 << 20)
        except (TimeoutError, OSError) as exc:
            raise RecordBroken(f"the record of {self.host}:{self.port} stopped: {exc}") from exc
        if not data:
            raise RecordBroken(f"the record of {self.host}:{self.port} stopped: the connection closed")
        self._buffer += data

    def _probe_scripts(self) -> bool:
        probe = f"contend-record-probe:{self.token}"
        self._command("EVAL", "return redis.call('ECHO', ARGV[1])", "0", probe)
        seen = [r for r in self.read_through(self.mark("probe")) if isinstance(r, Ran)]
        return any(r.by_script and r.args[1:] == (probe,) for r in seen)

    def _command(self, *args: str) -> None:
        """Run a command on the marker connection and wait for its reply (ignored): once it came,
        the server has run the command, and the monitor shows it before whatever comes next."""
        try:
            self._marker.sendall(_resp(*args))
            deadline = time.monotonic() + READ_TIMEOUT
            while not _whole_reply(self._replies):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RecordBroken(f"the server at {self.host}:{self.port} did not answer a marker")
                self._marker.settimeout(left)
                data = self._marker.recv(65536)
                if not data:
                    raise RecordBroken(
                        f"the record of {self.host}:{self.port} stopped: the connection closed"
                    )
                self._replies += data
        except OSError as exc:
            raise RecordBroken(f"the record of {self.host}:{self.port} stopped: {exc}") from exc
        self._replies = b""

    def mark(self, label: str = "") -> str:
        """Put a marker in the stream: what the server ran before it comes before, what it runs after
        comes after (the marker waits for the server's reply)."""
        self._next += 1
        marker = f"contend-record:{self.token}:{self._next}:{label}"
        self._command("ECHO", marker)
        return marker

    def read_through(self, marker: str) -> list[Ran | str]:
        """Everything the server ran since the last read, through `marker` (markers as their text)."""
        needle = f'"ECHO" "{marker}"'.encode()
        deadline = time.monotonic() + READ_TIMEOUT
        searched = 0
        while (at := self._buffer.find(needle, searched)) < 0 or (end := self._buffer.find(b"\r\n", at)) < 0:
            searched = max(0, len(self._buffer) - len(needle)) if at < 0 else searched
            self._fill(deadline)
        chunk, self._buffer = self._buffer[:end], self._buffer[end + 2 :]
        prefix = f"contend-record:{self.token}:"
        out: list[Ran | str] = []
        for line in chunk.split(b"\r\n"):
            ran = parse_line(line)
            if ran is None:
                continue
            if ran.args[0].upper() == "ECHO" and len(ran.args) == 2 and ran.args[1].startswith(prefix):
                out.append(ran.args[1])
            else:
                out.append(ran)
        return out

    def close(self) -> None:
        for sock in (self._monitor, self._marker):
            with contextlib.suppress(OSError):
                sock.close()


def between(entries: Sequence[Ran | str], start: str, end: str) -> list[Ran]:
    """The commands that lie between the markers `start` and `end` (none if either is missing)."""
    out: list[Ran] = []
    inside = False
    for entry in entries:
        if isinstance(entry, str):
            if entry == start:
                inside = True
            elif entry == end:
                return out if inside else []
        elif inside:
            out.append(entry)
    return []


def command_table(client: Any) -> list[Any]:
    """The server's command table: COMMAND's reply, as the server sent it (no redis-py parsing)."""
    conn = client.connection_pool.get_connection()
    try:
        conn.send_command("COMMAND")
        return list(conn.read_response())
    finally:
        client.connection_pool.release(conn)


def get_keys(client: Any, args: Sequence[str]) -> list[Any] | None:
    """What the server says the keys of `args` are, with their flags where it can say (COMMAND
    GETKEYSANDFLAGS, Redis 7+: [[key, [flag, ...]], ...]; else COMMAND GETKEYS: [key, ...]); None when
    it cannot say (the command takes no keys, or the server refuses)."""
    for sub in ("GETKEYSANDFLAGS", "GETKEYS"):
        conn = client.connection_pool.get_connection()
        try:
            conn.send_command("COMMAND", sub, *args)
            return list(conn.read_response())
        except redis.ResponseError as exc:
            if sub == "GETKEYS" or "subcommand" not in str(exc).lower():
                return None
        finally:
            client.connection_pool.release(conn)
    return None


@contextlib.contextmanager
def recording(url: str) -> Iterator[ServerRecord]:
    record = ServerRecord(url)
    try:
        yield record
    finally:
        record.close()
