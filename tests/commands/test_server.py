"""`contend server --info`: which binary, and its version."""

from __future__ import annotations

from contend.cli import main


def test_server_info(capsys):
    assert main(["server", "--info"]) == 0
    out = capsys.readouterr().out
    assert "version:" in out and ("Redis" in out or "Valkey" in out)
