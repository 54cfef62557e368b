"""The embedded server: a real redis-server this process starts, owns and always stops.

It listens on 127.0.0.1 and a free port, keeps its files in a temporary
directory and has persistence off unless asked for. It is stopped by `stop()`,
by leaving a `with` block (normally, by an exception or by Ctrl-C), and at
interpreter exit. On Linux the server also gets PR_SET_PDEATHSIG, so the kernel
kills it when the process that started it dies, even by SIGKILL.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Literal, Self

import redis

from contend.errors import ServerError
from contend.servers.binary import RedisBinary, find_redis_server
from contend.servers.clock import ServerClock, forget_process

Persistence = Literal["none", "aof", "rdb"]
DIR_PREFIX = "contend-redis-"
OWNER_FILE = "owner.pid"
STDERR_FILE = "stderr.log"
#: The server's own clock file: standing still while it starts, then a link to the run's clock.
CLOCK_FILE = "clock"

_live: set[EmbeddedRedis] = set()
_live_lock = threading.Lock()


class Lifecycle:
    """`with X() as x:` starts X and stops it on the way out, whatever happens inside (the
    embedded server, cluster and Sentinel group alike)."""

    def start(self) -> Self:
        raise NotImplementedError

    def stop(self, timeout: float = 5.0) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def stop_each(servers: Sequence[EmbeddedRedis], timeout: float = 5.0) -> None:
    """Stop every one of `servers`, whatever stopping one of them raises."""
    for server in servers:
        with contextlib.suppress(Exception):
            server.stop(timeout)


class EmbeddedRedis(Lifecycle):
    """A redis-server child process on 127.0.0.1."""

    def __init__(
        self,
        binary: RedisBinary | None = None,
        *,
        persistence: Persistence = "none",
        appendfsync: Literal["always", "everysec", "no"] = "always",
        port: int | None = None,
        extra_args: Sequence[str] = (),
        startup_timeout: float = 10.0,
        clock: ServerClock | None = None,
    ) -> None:
        if persistence not in ("none", "aof", "rdb"):
            raise ValueError(f"persistence must be 'none', 'aof' or 'rdb', got {persistence!r}")
        self.binary = binary or find_redis_server(keep_clock=clock is not None)
        #: The clock it keeps (libfaketime preloaded, contend.servers.clock); None: real time.
        self.clock = clock
        self.persistence = persistence
        self.appendfsync = appendfsync
        self.host = "127.0.0.1"
        self.port = port or 0
        self.extra_args = list(extra_args)
        self.startup_timeout = startup_timeout
        self.dir: Path | None = None
        self.process: subprocess.Popen[bytes] | None = None

    # Life cycle -------------------------------------------------------------
    def start(self) -> EmbeddedRedis:
        """Start the server and wait until it answers PING."""
        if self.running:
            return self
        if self.dir is None:
            _sweep_stale_dirs()
            self.dir = Path(tempfile.mkdtemp(prefix=DIR_PREFIX))
            (self.dir / OWNER_FILE).write_text(str(os.getpid()))
            with _live_lock:
                _live.add(self)
        fixed_port = bool(self.port)
        for _ in range(5):
            if not fixed_port:
                self.port = free_port()
            self._spawn()
            try:
                self._wait_ready()
                if self.clock is not None:
                    self.clock.follow(self.dir / CLOCK_FILE)
                return self
            except ServerError:
                in_use = "Address already in use" in self.log_tail()
                self._reap(signal.SIGKILL)
                if fixed_port or not in_use:
                    self._cleanup_dir()
                    raise
        self._cleanup_dir()
        raise ServerError("could not find a free port for redis-server after 5 tries")

    def stop(self, timeout: float = 5.0) -> None:
        """Stop the server (SIGTERM, then SIGKILL) and delete its directory."""
        self._reap(self._term_signal(), timeout)
        self._cleanup_dir()

    def kill(self) -> None:
        """kill -9 the server but keep its directory, so `start()` restarts it on its data."""
        self._reap(signal.SIGKILL)

    def restart(self) -> EmbeddedRedis:
        """Stop (SIGTERM) and start again on the same port and directory."""
        self._reap(self._term_signal())
        return self.start()

    def pause(self) -> None:
        """SIGSTOP: the server stops answering until `resume()`."""
        self._signal(signal.SIGSTOP)

    def resume(self) -> None:
        self._signal(signal.SIGCONT)

    # What it is -------------------------------------------------------------
    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    @property
    def url(self) -> str:
        return f"redis://{self.host}:{self.port}/0"

    def client(self, **kwargs: Any) -> redis.Redis:
        """A new redis-py client for this server."""
        kwargs.setdefault("socket_connect_timeout", 5)
        return redis.Redis(host=self.host, port=self.port, **kwargs)

    def describe(self) -> str:
        return f"embedded {self.binary.product} {self.binary.version} at {self.host}:{self.port}"

    def log_tail(self, lines: int = 15) -> str:
        """The last lines of its log, and of what it wrote on stderr (a preloaded library's complaint)."""
        if self.dir is None:
            return ""
        said = [
            line
            for name in (STDERR_FILE, "redis.log")
            if (self.dir / name).exists()
            for line in (self.dir / name).read_text(errors="replace").splitlines()
        ]
        return "\n".join(said[-lines:])

    def __repr__(self) -> str:
        state = f"pid {self.pid}" if self.running else "stopped"
        return f"<EmbeddedRedis {self.binary.product} {self.binary.version} :{self.port} {state}>"

    # Internals --------------------------------------------------------------
    def _args(self) -> list[str]:
        assert self.dir is not None
        args = [
            str(self.binary.path),
            "--port", str(self.port),
            "--bind", self.host,
            "--dir", str(self.dir),
            "--logfile", "redis.log",
            "--daemonize", "no",
            "--save", "",
            "--appendonly", "no",
            # A replica's first sync at once: Redis 7 syncs diskless by default and waits 5 s for
            # more replicas first, in which a replica is not in sync and cannot be promoted.
            "--repl-diskless-sync-delay", "0",
        ]  # fmt: skip
        if self.persistence == "aof":
            args += ["--appendonly", "yes", "--appendfsync", self.appendfsync]
        elif self.persistence == "rdb":
            args += ["--save", "1 1"]
        return args + self.extra_args

    def _spawn(self) -> None:
        # The death signal follows the OS thread that forks: only ask for it from the
        # main thread (native ids, so greenlets on the main thread count too).
        use_pdeathsig = sys.platform.startswith("linux") and (
            threading.get_native_id() == threading.main_thread().native_id
        )
        assert self.dir is not None
        env = None
        if self.clock is not None:  # it starts on a clock standing still (contend.servers.clock)
            self.clock.hold(self.dir / CLOCK_FILE)
            env = {**os.environ, **self.clock.environment(self.binary.product, self.dir / CLOCK_FILE)}
        with (self.dir / STDERR_FILE).open("ab") as stderr:
            self.process = subprocess.Popen(
                self._args(),
                cwd=self.dir,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                start_new_session=True,
                preexec_fn=_die_with_parent if use_pdeathsig else None,
            )

    def _wait_ready(self) -> None:
        assert self.process is not None
        deadline = time.monotonic() + self.startup_timeout
        probe = redis.Redis(host=self.host, port=self.port, socket_connect_timeout=0.5, socket_timeout=1)
        try:
            while time.monotonic() < deadline:
                if self.process.poll() is not None:
                    raise ServerError(
                        f"{self.binary.path} exited with code {self.process.returncode} "
                        f"before answering PING; its log says:\n{self.log_tail()}"
                    )
                try:
                    probe.ping()
                    return
                except (redis.AuthenticationError, redis.ResponseError):
                    return  # it answers; it just wants a password (--requirepass)
                except (redis.ConnectionError, redis.TimeoutError):
                    pass
                time.sleep(0.002)
        finally:
            probe.close()
        raise ServerError(
            f"{self.binary.path} did not answer PING on port {self.port} within "
            f"{self.startup_timeout} s; its log says:\n{self.log_tail()}"
        )

    def _term_signal(self) -> signal.Signals:
        """SIGTERM; but SIGKILL for a Valkey without persistence on a clock: its timers (which
        handle SIGTERM) wait while a scheduler holds the clock still, and it has nothing to save."""
        if self.clock is not None and self.binary.product == "Valkey" and self.persistence == "none":
            return signal.SIGKILL
        return signal.SIGTERM

    def _signal(self, sig: signal.Signals) -> None:
        if not self.running:
            raise ServerError(f"{self!r} is not running")
        assert self.process is not None
        self.process.send_signal(sig)

    def _reap(self, sig: signal.Signals, timeout: float = 5.0) -> None:
        proc = self.process
        if proc is None:
            return
        if proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(signal.SIGCONT)  # a paused server cannot handle SIGTERM
                proc.send_signal(sig)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        if self.clock is not None:
            forget_process(proc.pid)
        self.process = None

    def _cleanup_dir(self) -> None:
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
            self.dir = None
        with _live_lock:
            _live.discard(self)


def clock_of(host: str | None, port: int | None) -> ServerClock | None:
    """The clock of a server this process started and still runs at host:port (a test, or a
    `contend.testing` user, that hands contend the URL of a server contend started for it); None
    for any other server, which keeps its own time."""
    with _live_lock:
        servers = list(_live)
    for server in servers:
        if server.clock is not None and server.running and (server.host, server.port) == (host, port):
            return server.clock
    return None


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux for SIGKILL when the parent dies."""
    PR_SET_PDEATHSIG = 1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _sweep_stale_dirs() -> None:
    """Remove directories left by embedded servers whose owner process died."""
    for path in Path(tempfile.gettempdir()).glob(DIR_PREFIX + "*"):
        try:
            owner = int((path / OWNER_FILE).read_text())
        except (OSError, ValueError):
            continue
        if not _pid_alive(owner):
            shutil.rmtree(path, ignore_errors=True)


@atexit.register
def stop_all(timeout: float = 5.0) -> None:
    """Stop every embedded server this process still runs (SIGTERM, SIGKILL after `timeout` s)."""
    with _live_lock:
        servers = list(_live)
    for server in servers:
        with contextlib.suppress(Exception):
            server.stop(timeout)
