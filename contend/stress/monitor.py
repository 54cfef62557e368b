"""A stress run's record of what the server ran: its MONITOR stream, kept in a file as it comes.

The transaction workload is judged from the commands the server executed
(contend.stress.attribution reads the file). A thread of the parent reads the
stream for the whole run and appends it, as the server sent it, to
`<run>/monitor.log`. When the stream is cut (the server was killed, or the
connection dropped) the thread says so in the file and connects again until
the server answers:

    #cut <start> <end>

in time.monotonic_ns(), the clock the workers stamp their operations with:
`start` is when the last command the stream delivered ran (the server's time
of the line, moved onto this clock, less CUT_MARGIN), `end` when MONITOR was
granted again (0: never, the run ended first). Whatever the server ran in
between is unseen; the operations in flight then are not judged by the graph.

A server-pause stops the stream without cutting it: the thread waits (no read
timeout). Against a --redis-url server MONITOR may be refused (ACLs): the
record is then absent (`MonitorRecord.refused` says why) and the graph
judges nothing.
"""

from __future__ import annotations

import contextlib
import re
import socket
import threading
import time
from pathlib import Path

import redis

#: Taken off a cut's start: how late the stream may deliver a line the server ran.
CUT_MARGIN_NS = 50_000_000
_TIME = re.compile(rb"^\+(\d+)\.(\d+) \[")


def _resp(*args: str) -> bytes:
    out = [b"*%d\r\n" % len(args)]
    for arg in args:
        data = arg.encode()
        out.append(b"$%d\r\n%s\r\n" % (len(data), data))
    return b"".join(out)


class MonitorRecord:
    """The MONITOR stream of the server at `url`, appended to `path` by a thread of its own."""

    def __init__(self, url: str, path: Path) -> None:
        params = redis.connection.parse_url(url)
        self.host = str(params.get("host", "127.0.0.1"))
        self.port = int(params.get("port", 6379))
        self._auth = [str(a) for a in (params.get("username"), params.get("password")) if a]
        self.path = path
        self.cuts = 0
        #: Why the server refused MONITOR ("" when it granted it).
        self.refused = ""
        self._stop = threading.Event()
        self._sock: socket.socket | None = None
        self._file = path.open("ab")
        self._offset: int | None = None  # min over lines of (arrival - server time), ns
        self._last_server_ns = 0  # server time of the last line delivered
        self._end = b""  # the marker stop() waits for
        self._tail = b""
        self._ended = threading.Event()
        self._thread = threading.Thread(target=self._run, name="contend-monitor", daemon=True)

    def start(self) -> MonitorRecord:
        """Grant MONITOR (or say why not) before returning: what the server runs next is recorded."""
        try:
            self._sock, rest = self._open()
        except (OSError, _Refused) as exc:
            self.refused = str(exc)
            self._file.close()
            return self
        self._write(rest)
        self._thread.start()
        return self

    @property
    def active(self) -> bool:
        return not self.refused

    def _open(self) -> tuple[socket.socket, bytes]:
        sock = socket.create_connection((self.host, self.port), timeout=2)
        try:
            if self._auth:
                sock.sendall(_resp("AUTH", *self._auth))
                if not sock.recv(1024).startswith(b"+OK"):
                    raise _Refused("the server refused AUTH for MONITOR")
            sock.sendall(_resp("MONITOR"))
            data = b""
            while b"\r\n" not in data:
                chunk = sock.recv(65536)
                if not chunk:
                    raise OSError("the connection closed")
                data += chunk
            head, _, rest = data.partition(b"\r\n")
            if not head.startswith(b"+OK"):
                raise _Refused(f"MONITOR refused: {head.decode(errors='replace')}")
            sock.settimeout(None)
            return sock, rest
        except BaseException:
            sock.close()
            raise

    def _write(self, data: bytes) -> None:
        if not data:
            return
        now = time.monotonic_ns()
        self._file.write(data)
        if self._end:
            seen = self._tail + data
            if self._end in seen:
                self._ended.set()
            self._tail = seen[-256:]
        # The latest complete line's server time, and the tightest offset of the server's clock.
        for line in data.split(b"\r\n")[-3:]:
            found = _TIME.match(line)
            if found is not None:
                server = int(found.group(1)) * 1_000_000_000 + int(found.group(2).ljust(9, b"0")[:9])
                self._last_server_ns = max(self._last_server_ns, server)
                offset = now - server
                self._offset = offset if self._offset is None else min(self._offset, offset)

    def _run(self) -> None:
        while not self._stop.is_set():
            sock = self._sock
            assert sock is not None
            try:
                data = sock.recv(1 << 20)
            except OSError:
                data = b""
            if data:
                self._write(data)
                continue
            if self._stop.is_set():
                break
            self._cut()

    def _cut(self) -> None:
        """The stream stopped: note from when, and connect again until MONITOR is granted."""
        if self._offset is not None and self._last_server_ns:
            start = self._last_server_ns + self._offset - CUT_MARGIN_NS
        else:
            start = time.monotonic_ns() - CUT_MARGIN_NS
        with contextlib.suppress(OSError):
            assert self._sock is not None
            self._sock.close()
        self.cuts += 1
        self._file.write(b"\r\n")  # a line cut short ends here
        while not self._stop.is_set():
            try:
                self._sock, rest = self._open()
            except (OSError, _Refused):
                time.sleep(0.02)
                continue
            self._file.write(b"#cut %d %d\r\n" % (start, time.monotonic_ns()))
            self._write(rest)
            return
        self._file.write(b"#cut %d 0\r\n" % start)

    def stop(self) -> None:
        """Stop reading, once the stream has delivered what the server ran so far (a marker sent
        now comes back through it; not waited for when the server does not answer), and close."""
        if self.refused:
            return
        self._end = f"contend-record-end:{id(self)}".encode()
        try:
            sock = socket.create_connection((self.host, self.port), timeout=2)
            try:
                if self._auth:
                    sock.sendall(_resp("AUTH", *self._auth))
                    sock.recv(1024)
                sock.sendall(_resp("ECHO", self._end.decode()))
                sock.recv(1024)
            finally:
                sock.close()
            self._ended.wait(5)
        except OSError:
            pass
        self._stop.set()
        with contextlib.suppress(OSError):
            assert self._sock is not None
            self._sock.shutdown(socket.SHUT_RDWR)
        self._thread.join(5)
        with contextlib.suppress(OSError):
            self._file.close()


class _Refused(Exception):
    """The server refused MONITOR (or AUTH)."""
