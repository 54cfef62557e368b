"""Every run's first line names the server it runs on and its version: the one a run in real time
uses (stress, load: any redis-server that runs), or the one that keeps contend's clock (the rest)."""

from __future__ import annotations

import pytest

from contend.cli import main
from contend.servers.binary import find_redis_server

QUICK = [
    (["check", "--only", "setnx_del", "--check", "burst"], True),
    (["hunt", "--only", "naive", "--runs", "1", "--max-examples", "20", "--no-shrink"], True),
    (["bench", "lock", "--duration", "0.1", "--clients", "2"], True),
    (["scoreboard", "--quick", "--lib", "redis-py", "--no-write"], True),
    (["server", "--info"], False),
]
SLOW = [
    (["stress", "--only", "token", "--duration", "1", "--processes", "2"], False),
    (["load", "--users", "1", "--hot-keys", "1", "--strategy", "lua", "--duration", "1"], False),
    (["redlock", "--runs", "1", "--max-examples", "5"], True),
]


@pytest.mark.parametrize(
    ("argv", "keeps_clock"),
    [*QUICK, *(pytest.param(*case, marks=pytest.mark.slow) for case in SLOW)],
    ids=lambda v: v[0] if isinstance(v, list) else None,
)
def test_the_first_line_names_the_server_and_its_version(argv, keeps_clock, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # stress and load write their files under the working directory
    if argv[0] == "load":
        argv = [*argv, "--out", str(tmp_path / "load")]
    binary = find_redis_server(keep_clock=keeps_clock)
    main(argv)
    first = capsys.readouterr().out.splitlines()[0]
    assert f"{binary.product} {binary.version}" in first, first
