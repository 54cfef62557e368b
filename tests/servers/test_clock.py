"""The servers' clock: the instants libfaketime reads, who drives the clock, and binaries that
cannot keep it (skipped by default, refused with the fix when named)."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from contend.cli import main
from contend.errors import ServerError
from contend.servers.binary import ENV_VAR, find_redis_server
from contend.servers.clock import REAL_TIME, ServerClock, _instant, keeps_time
from contend.servers.server import EmbeddedRedis


@pytest.fixture
def real() -> Path:
    return find_redis_server(keep_clock=True).path


@pytest.fixture
def ignores_preload(tmp_path: Path, real: Path) -> Path:
    """A redis-server that keeps real time whatever is preloaded, as a statically linked one does."""
    path = tmp_path / "bin" / "redis-server"
    path.parent.mkdir()
    path.write_text(f'#!/bin/sh\nexec /usr/bin/env -u LD_PRELOAD "{real}" "$@"\n')
    path.chmod(0o755)
    return path


def test_an_instant_is_utc_to_the_microsecond_with_half_a_microsecond_more():
    assert _instant(1_000_000_000.5) == "2001-09-09 01:46:40.500000500"
    assert _instant(1_000_000_001.501) == "2001-09-09 01:46:41.501000500"
    assert _instant(59.9999999) == "1970-01-01 00:01:00.000000500"
    parsed = datetime.datetime.strptime(_instant(1_795_000_000.25)[:26], "%Y-%m-%d %H:%M:%S.%f")
    assert parsed.replace(tzinfo=datetime.timezone.utc).timestamp() == 1_795_000_000.25


def test_the_last_scheduler_to_take_the_clock_drives_it_until_it_gives_it_back(tmp_path):
    clock = ServerClock(tmp_path)
    first, second = object(), object()
    assert clock.path.read_text() == REAL_TIME and not clock.driven
    clock.take(first, 100.0)
    clock.take(second, 200.0)
    clock.set(first, 150.0)  # a scheduler left behind by an abandoned check moves nothing
    assert clock.path.read_text() == _instant(200.0)
    clock.set(second, 201.0)
    assert clock.path.read_text() == _instant(201.0)
    clock.give_back(second)
    assert clock.driven and clock.path.read_text() == _instant(201.0)
    clock.give_back(first)
    assert not clock.driven and clock.path.read_text() == REAL_TIME


def test_the_embedded_server_keeps_the_clock(real):
    assert keeps_time(str(real), "Redis") == ""


def test_a_server_that_ignores_the_preload_is_found_out(ignores_preload):
    why = keeps_time(str(ignores_preload), "Redis")
    assert why.startswith("its clock does not follow libfaketime's")


def test_a_binary_that_cannot_start_is_found_out(tmp_path):
    path = tmp_path / "redis-server"
    path.write_text(
        "#!/bin/sh\n/bin/echo 'libfaketime: Cannot recover from recursive calls' >&2\n/bin/sleep 30\n"
    )
    path.chmod(0o755)
    assert keeps_time(str(path), "Redis") == (
        "it does not start with libfaketime preloaded (libfaketime: Cannot recover from recursive calls)"
    )


def test_a_named_binary_that_cannot_keep_the_clock_is_refused_with_the_fix(ignores_preload):
    with pytest.raises(ServerError, match="cannot keep contend's virtual clock") as info:
        find_redis_server(ignores_preload, keep_clock=True)
    assert "leave out --redis-server" in str(info.value)
    assert find_redis_server(ignores_preload).path == ignores_preload  # real time needs no clock


def test_one_on_path_that_cannot_keep_the_clock_is_skipped_for_one_that_can(
    ignores_preload, monkeypatch, real
):
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.setenv("PATH", str(ignores_preload.parent))
    found = find_redis_server(keep_clock=True)
    assert found.path == real
    (skipped,) = [s for s in found.skipped if s.source == "PATH"]
    assert "its clock does not follow libfaketime's" in skipped.reason


def test_check_refuses_such_a_binary_in_one_line_before_anything_starts(ignores_preload, capsys):
    code = main(["check", "--only", "setnx_del", "--redis-server", str(ignores_preload)])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("contend: --redis-server:") and "cannot keep contend's virtual clock" in err
    assert "Traceback" not in err and "setnx_del" not in capsys.readouterr().out


def test_a_server_on_a_clock_leaves_nothing_in_shared_memory(tmp_path):
    clock = ServerClock(tmp_path)
    with EmbeddedRedis(clock=clock) as server:
        pid = server.pid
        assert server.client().time()[0] > 0
    assert not list(Path("/dev/shm").glob(f"*faketime_*_{pid}"))
    killed = EmbeddedRedis(clock=clock).start()
    pid = killed.pid
    killed.kill()  # SIGKILL: libfaketime cannot clean up after itself
    killed.stop()
    assert not list(Path("/dev/shm").glob(f"*faketime_*_{pid}"))
