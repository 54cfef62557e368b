"""One clock for the clients and the redis-servers contend starts.

The scheduler runs its clients on a virtual clock (contend.schedule). So that the server
agrees with them, every redis-server a run starts has libfaketime preloaded (the library the
`libfaketime` package ships) and reads the time from a small file this module writes (a
`ServerClock`, one per run's servers). The file holds either:

* ``+0``: real time. Stress, load and the checks that run in real time see the server's
  own clock, as without libfaketime;
* an instant, at which the server's clock stands still until the scheduler moves it. While a
  scheduler runs, it writes its virtual time there at every step: `TIME` (in scripts too),
  TTLs, `PXAT`/`EXPIREAT`, lazy and active expiry all follow it, to the microsecond, and the
  same example gives the server the same instants every time it runs.

The file is replaced whole (write, then rename): libfaketime reads it at every clock call
(`FAKETIME_NO_CACHE`), and a half-written one would stop the server.

Each server starts on a file of its own, standing still at the run's now, and follows the run's
file once it answers (`hold`, then `follow`: the file becomes a link to the run's). A server
chooses its clocks as it starts: Valkey 9 on x86-64 measures the processor's clock (TSC) against
the monotonic clock over 30 ms and, if it ticks, reads its time from the processor's clock
between wall-clock readings up to 1 ms apart, which no preloaded library can stop. On a monotonic
clock that stands still it cannot measure the TSC and keeps POSIX clocks, which libfaketime
fakes: its TIME and TTLs then follow the run's clock to the microsecond.

Not every binary keeps such a clock (a statically linked one ignores the preload; Debian's
Redis 7.0 does not start under it): `keeps_time` starts a binary once on a clock of its own
and says why it cannot, and contend then uses another or refuses with the fix
(contend.servers.binary). A server contend did not start (`--redis-url`) keeps its own time;
the checks that need the run's clock say what they cannot judge there.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import platform
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from functools import cache
from pathlib import Path

import redis

#: The instants a probe freezes a server at: a whole second plus half a second, then the
#: moments just before and just after a 1000 ms TTL set at the first runs out.
_PROBE_AT = 1_000_000_000.5
REAL_TIME = "+0"
#: The instant every example starts the servers (and its clients' wall clocks) at: fixed, in every
#: run and every process, so that an example replayed gives the same server times, the same
#: timestamps in tokens and the same replies (2023-11-14 22:13:20 UTC: in the past, so that a key a
#: real-time check left with a TTL lives longer while an example runs, never shorter).
EPOCH = 1_700_000_000.0


def library() -> Path:
    """libfaketime's shared library, from the `libfaketime` package; ClockUnavailable says
    why there is none (the package is missing, or ships nothing for this platform)."""
    spec = importlib.util.find_spec("libfaketime")  # not imported: it would import its own deps
    if spec is None or not spec.submodule_search_locations:
        raise ClockUnavailable(
            "the libfaketime package is not installed (contend depends on it on Linux): "
            "pip install 'libfaketime>=3.0.1,<4'"
        )
    name = "libfaketime.1.dylib" if platform.system() == "Darwin" else "libfaketime.so.1"
    for place in spec.submodule_search_locations:
        found = Path(place) / "vendor" / "libfaketime" / "src" / name
        if found.is_file():
            return found
    raise ClockUnavailable(
        f"the libfaketime package ships no {name} for this platform ({platform.system()} "
        f"{platform.machine()}); contend keeps the server's clock on Linux"
    )


class ClockUnavailable(Exception):
    """libfaketime cannot be preloaded here, or a binary does not keep its clock; the message
    says why (contend.servers.binary turns it into a ServerError with the fix)."""


class ServerClock:
    """The time the redis-servers of one run keep: real, or frozen at an instant the scheduler
    sets. One scheduler at a time drives it (the last one to `take` it)."""

    def __init__(self, directory: Path | None = None) -> None:
        self._own_dir = directory is None
        if directory is None:
            _sweep_stale_clocks()
            directory = Path(tempfile.mkdtemp(prefix=_PREFIX, dir=_memory_dir()))
            (directory / "owner.pid").write_text(str(os.getpid()))
        self.dir = directory
        self.path = self.dir / "faketime"
        #: The wall-clock instant every scheduler on this clock starts at (its virtual zero).
        self.epoch = EPOCH
        self._owners: list[object] = []
        self._lock = threading.Lock()
        self._write(REAL_TIME)

    @classmethod
    def attach(cls, path: str | os.PathLike[str], epoch: float) -> ServerClock:
        """The clock whose file is `path`, made by another process (a scoreboard worker drives
        the servers its parent started)."""
        clock = cls.__new__(cls)
        clock._own_dir = False
        clock.path = Path(path)
        clock.dir = clock.path.parent
        clock.epoch = epoch
        clock._owners = []
        clock._lock = threading.Lock()
        return clock

    def environment(self, product: str = "Redis", own: Path | None = None) -> dict[str, str]:
        """What a server process needs in its environment to keep this clock, read from `own` (its
        own file: `hold`, then `follow`) or else from the run's file. Valkey gets a faked monotonic
        clock too: started on one that stands still, it keeps POSIX clocks (see above), and its
        timers then wait while the clock stands still; Redis's run in real time."""
        preload = ":".join(filter(None, [str(library()), os.environ.get("LD_PRELOAD", "")]))
        env = {
            "LD_PRELOAD": preload,
            "FAKETIME_TIMESTAMP_FILE": str(own or self.path),
            "FAKETIME_NO_CACHE": "1",
            "FAKETIME_FMT": "%Y-%m-%d %H:%M:%S",
            "TZ": "UTC",
        }
        if platform.system() == "Darwin":
            env = {
                "DYLD_INSERT_LIBRARIES": env.pop("LD_PRELOAD"),
                "DYLD_FORCE_FLAT_NAMESPACE": "1",
                **env,
            }
        if product != "Valkey":
            env["FAKETIME_DONT_FAKE_MONOTONIC"] = "1"
        return env

    # A server's own file ------------------------------------------------------------------
    def hold(self, own: Path) -> None:
        """Make `own` a clock standing still at the run's now (the instant a scheduler set, or the
        real time), for a server to start on."""
        with self._lock:
            now = self.path.read_text()
        _replace(own, _instant(time.time()) if now == REAL_TIME else now)

    def follow(self, own: Path) -> None:
        """From now on `own` reads as the run's clock (a link to its file)."""
        link = own.with_name(f"{own.name}.link")
        with contextlib.suppress(FileNotFoundError):
            link.unlink()
        link.symlink_to(self.path)
        os.replace(link, own)

    # Who drives it ------------------------------------------------------------------------
    def take(self, owner: object, at: float) -> None:
        """`owner` (a scheduler) drives the clock from now on, starting at `at` (seconds since
        the epoch, on the wall clock)."""
        with self._lock:
            self._owners.append(owner)
            self._write(_instant(at))

    def set(self, owner: object, at: float) -> None:
        """Move the servers' clock to `at`, if `owner` drives it (a scheduler left over from an
        abandoned check does not)."""
        with self._lock:
            if self._owners and self._owners[-1] is owner:
                self._write(_instant(at))

    def give_back(self, owner: object) -> None:
        """`owner` is done: the clock goes back to the scheduler before it, frozen where that one
        left it, or to real time."""
        with self._lock:
            if owner not in self._owners:
                return
            self._owners.remove(owner)
            if not self._owners:
                self._write(REAL_TIME)

    @property
    def driven(self) -> bool:
        """Does a scheduler drive the clock now (it stands still between steps)?"""
        return bool(self._owners)

    def close(self) -> None:
        """Delete the clock's file (and its directory, if it made one)."""
        if self._own_dir:
            shutil.rmtree(self.dir, ignore_errors=True)

    def _write(self, text: str) -> None:
        _replace(self.path, text)


_PREFIX = "contend-clock-"


def _replace(path: Path, text: str) -> None:
    """Write `text` to `path` whole: a new file renamed over it (over a link too, not through it)."""
    partial = f"{path}.new"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(partial, path)


def forget_process(pid: int) -> None:
    """Remove what libfaketime made in shared memory for a server process that has ended (a
    semaphore and a segment named after its pid; it removes them itself only on a clean exit)."""
    for name in (f"faketime_shm_{pid}", f"sem.faketime_sem_{pid}"):
        with contextlib.suppress(OSError):
            os.unlink(os.path.join("/dev/shm", name))


def _memory_dir() -> str | None:
    """Where the clock's file lives: in memory (/dev/shm) where there is one, since it is written
    at every step and read at every clock call of the server (13 µs a write there, 130 µs on
    this machine's disk); else the temporary directory."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def _sweep_stale_clocks() -> None:
    """Remove the clocks of processes that died without closing them."""
    for base in {_memory_dir() or tempfile.gettempdir(), tempfile.gettempdir()}:
        for path in Path(base).glob(_PREFIX + "*"):
            try:
                owner = int((path / "owner.pid").read_text())
                os.kill(owner, 0)
            except ProcessLookupError:
                shutil.rmtree(path, ignore_errors=True)
            except (OSError, ValueError):
                continue


def _instant(at: float) -> str:
    """`at` (seconds since the epoch) as libfaketime reads an instant: UTC, to the microsecond,
    plus half a microsecond in nanoseconds (libfaketime reads the fraction as a double and cuts
    it to whole nanoseconds: .501000 would become .500999999, a microsecond early)."""
    whole = int(at // 1)
    micros = round((at - whole) * 1_000_000)
    if micros == 1_000_000:
        whole, micros = whole + 1, 0
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(whole)) + f".{micros:06d}500"


@cache
def keeps_time(binary_path: str, product: str) -> str:
    """Does the server at `binary_path` keep a clock it is given? "" if it does, else why not
    (one line). Starts it once per process as contend starts its servers (on a clock standing
    still, then on the run's clock in real time), then holds the clock still and moves it: TIME,
    a script's TIME and a 1000 ms TTL must follow it to the microsecond and the millisecond, and
    the server keeps real time again once the clock is given back."""
    try:
        library()
    except ClockUnavailable as exc:
        return str(exc)
    clock = ServerClock()
    own = clock.dir / "server"
    clock.hold(own)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    err, log = clock.dir / "stderr", clock.dir / "log"
    with err.open("wb") as stderr, log.open("wb") as stdout:
        try:
            proc = subprocess.Popen(
                [binary_path, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                cwd=clock.dir,
                env={**os.environ, **clock.environment(product, own)},
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                start_new_session=True,
            )
        except OSError as exc:
            clock.close()
            return f"it cannot be started: {exc.strerror or exc}"
    client = redis.Redis(port=port, socket_connect_timeout=0.5, socket_timeout=2)
    try:
        why = _started(proc, client, err)
        if not why:
            clock.follow(own)
            why = _judge_probe(client, clock)
        return f"{why}{_hardware_clock(log)}" if why.startswith("it does not keep") else why
    finally:
        client.close()
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGKILL)
        proc.wait()
        forget_process(proc.pid)
        clock.close()


def _started(proc: subprocess.Popen[bytes], client: redis.Redis, err: Path) -> str:
    """Why the server does not answer PING; empty once it does."""
    deadline = time.monotonic() + 10
    while True:
        if proc.poll() is not None:
            said = err.read_text(errors="replace").strip().splitlines()
            why = said[-1] if said else f"exit status {proc.returncode}"
            return f"it does not start with libfaketime preloaded ({why})"
        complaint = [line for line in err.read_text(errors="replace").splitlines() if "Cannot" in line]
        if complaint:  # libfaketime gave up (Debian's Redis 7.0: recursive clock_gettime calls)
            return f"it does not start with libfaketime preloaded ({complaint[0].strip()})"
        try:
            client.ping()
            return ""
        except (redis.ConnectionError, redis.TimeoutError):
            if time.monotonic() > deadline:
                return "it did not answer PING within 10 s with libfaketime preloaded"
            time.sleep(0.005)


def _judge_probe(client: redis.Redis, clock: ServerClock) -> str:
    """Why the server does not keep `clock` exactly, running on it in real time; empty if it does."""
    if abs(_seconds(client.time()) - time.time()) > 2:
        return f"it does not keep real time on libfaketime's clock (TIME said {_seconds(client.time()):.6f})"
    clock.take("probe", _PROBE_AT)
    said = client.time()
    time.sleep(0.003)  # longer than a server reads its time from a processor clock between readings
    still = client.time()
    if abs(_seconds(still) - _PROBE_AT) > 1:  # the real time still: the preload does nothing
        return (
            f"its clock does not follow libfaketime's (TIME said {_seconds(still):.6f}, the clock "
            f"{_PROBE_AT}): statically linked?"
        )
    clock.set("probe", _PROBE_AT + 0.000_250)
    moved = client.time()
    if (said, still, moved) != ((1_000_000_000, 500_000),) * 2 + ((1_000_000_000, 500_250),):
        return (
            "it does not keep the clock to the microsecond (TIME said "
            f"{_seconds(said):.6f}, then {_seconds(still):.6f} 3 ms later, then {_seconds(moved):.6f} "
            f"on a clock standing at {_PROBE_AT:.6f}, then at {_PROBE_AT + 0.000_250:.6f})"
        )
    client.set("contend:clock-probe", "1", px=1000)
    clock.set("probe", _PROBE_AT + 0.999)
    scripted = client.eval("return redis.call('TIME')", 0)
    left = client.pttl("contend:clock-probe")
    clock.set("probe", _PROBE_AT + 1.001)
    client.ping()
    gone = not client.exists("contend:clock-probe")
    if [int(v) for v in scripted] != [1_000_000_001, 499_000] or left != 1 or not gone:  # type: ignore[union-attr]
        return (
            "it does not keep the clock to the millisecond (a script's TIME, a 1000 ms TTL 999 ms "
            f"later, and 2 ms later: {scripted}, PTTL {left}, {'expired' if gone else 'still there'})"
        )
    clock.give_back("probe")
    if abs(_seconds(client.time()) - time.time()) > 2:
        return (
            "it does not keep real time again once the clock is given back (TIME said "
            f"{_seconds(client.time()):.6f})"
        )
    return ""


def _seconds(time_reply: tuple[int, int]) -> float:
    seconds, micros = time_reply
    return seconds + micros / 1e6


def _hardware_clock(log: Path) -> str:
    """Why, when its log says its monotonic clock is the processor's (Valkey 9 on ARM64, say)."""
    said = [line for line in log.read_text(errors="replace").splitlines() if "monotonic clock:" in line]
    if said and "POSIX" not in said[0]:
        which = said[0].split("monotonic clock:", 1)[1].strip()
        return f": it reads its time from the processor's clock ({which}), which libfaketime cannot stop"
    return ""
