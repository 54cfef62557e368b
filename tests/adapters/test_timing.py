"""Each adapter's acquire keeps the library's own timing: a try of a held lock is one try, and a
blocking acquire with a timeout returns when the library returns, never later than the timeout
plus what the library itself is documented (or seen in its source) to take past it. A rate
limiter's hit on a full window is refused at once: one try, no waiting for room.

A row's probe (tests/adapters/timing_probe.py) runs here when its library is installed (the libs
extra), else in the row's own environment (slow: made with pip when it is not cached).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from contend.impl.catalog import MUTUAL_EXCLUSION
from contend.scoreboard.environments import Environment, EnvironmentFailed, cache_root, worker_environ
from contend.scoreboard.expected import expected_failures
from contend.scoreboard.libraries import LIBRARIES
from contend.scoreboard.library import Library, LibraryMissing
from tests.adapters import timing_probe

PROBE = Path(timing_probe.__file__)
TIMEOUT = 0.5
#: Past the timeout, what any row may take: one try's round trips on a busy machine.
SLACK = 0.3
#: What a library itself takes past a timeout, and why (its own code, not its adapter's).
OWN_OVERRUN = {
    # acquire(timeout=t) waits up to t per BLPOP, whose timeout is whole seconds (LIMITATIONS).
    "python-redis-lock": 1.0,
    "python-redis-lock-renewal": 1.0,
    # One `RedLock.acquire()` makes retry_times (3) tries retry_delay (0-200 ms, random) apart and
    # takes no timeout: the call begun just before the deadline runs to its end (redlock/lock.py).
    "redlock": 0.6,
}
#: How many times a measurement past the bound is taken, the quickest judged.
MEASUREMENTS = 3
#: Locks and semaphores over one server (a multi-master row needs masters of its own).
ROWS = [lib for lib in LIBRARIES if lib.adapter and lib.family in ("lock", "semaphore") and lib.masters == 1]


def installed_here(lib: Library) -> bool:
    try:
        lib.version()
        lib.adapter_module()
    except (LibraryMissing, ValueError):
        return False
    return True


#: The rate limiters.
LIMITERS = [lib for lib in LIBRARIES if lib.adapter and lib.family == "rate_limiter"]


def measured(lib: Library, url: str, key: str) -> dict[str, object]:
    if installed_here(lib):
        if lib.family == "rate_limiter":
            return timing_probe.measure_hit(lib.adapter, url, key)
        return timing_probe.measure(lib.adapter, url, key, TIMEOUT)
    try:
        wanted = lib.requirements or lib.no_deps
        path = Environment(lib.requirements, cache_root(), no_deps=lib.no_deps).ensure() if wanted else None
    except EnvironmentFailed as exc:
        pytest.skip(f"no package index answers here: {exc}")
    done = subprocess.run(
        [
            sys.executable,
            str(PROBE),
            lib.adapter,
            url,
            key,
            "hit" if lib.family == "rate_limiter" else str(TIMEOUT),
        ],
        capture_output=True,
        text=True,
        env=worker_environ(path),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


@pytest.mark.parametrize(
    "lib",
    [pytest.param(lib, marks=() if installed_here(lib) else pytest.mark.slow, id=lib.key) for lib in ROWS],
)
def test_the_adapter_adds_no_time_of_its_own(lib, contend_target, ns):
    """The real clock on a shared machine: a measurement past the bound is taken again, up to
    MEASUREMENTS times, and the quickest is judged. Time an adapter adds is added every time; a
    process the machine did not run for a moment is not."""
    bound = TIMEOUT + OWN_OVERRUN.get(lib.key, 0.0) + SLACK
    runs = []
    for n in range(MEASUREMENTS):
        seen = measured(lib, contend_target.url, ns.key(lib.key, str(n)))
        if MUTUAL_EXCLUSION not in expected_failures(
            lib.key
        ):  # a lock that keeps a holder's lock (sherlock with expire=None does not)
            assert seen["tried"] is False and seen["waited"] is False, seen
        runs.append(seen)
        if seen["try_s"] < SLACK and seen["wait_s"] <= bound:
            break
    quickest_try = min(float(seen["try_s"]) for seen in runs)
    quickest_wait = min(float(seen["wait_s"]) for seen in runs)
    assert quickest_try < SLACK, f"a try of a held lock took {quickest_try:.2f} s at best: more than one try"
    assert quickest_wait <= bound, (
        f"acquire(timeout={TIMEOUT}) took {quickest_wait:.2f} s at best of {len(runs)} (> {bound:.2f} s)"
    )


def test_a_probe_catches_an_adapter_that_retries_past_the_timeout(contend_target, ns, monkeypatch):
    """An adapter that retried on its own past the timeout (redlock-py's first adapter, whose
    deadline started after its first 0.6 s lock()) is caught: its acquire overruns the bound."""
    from contend.adapters import polling

    real = polling.poll

    def late(try_once, blocking, timeout, interval=polling.INTERVAL):  # type: ignore[no-untyped-def]
        got = real(try_once, blocking, timeout, interval)
        return got or real(try_once, blocking, timeout, interval)  # tries a second round

    monkeypatch.setattr("contend.adapters.dramatiq.poll", late, raising=False)
    lib = next(lib for lib in ROWS if lib.key == "dramatiq")
    if not installed_here(lib):
        pytest.skip("dramatiq is not installed here (pip install 'contend[libs]')")
    seen = timing_probe.measure(lib.adapter, contend_target.url, ns.key("late"), TIMEOUT)
    assert seen["wait_s"] > TIMEOUT * 2 - 0.05


@pytest.mark.parametrize(
    "lib",
    [
        pytest.param(lib, marks=() if installed_here(lib) else pytest.mark.slow, id=lib.key)
        for lib in LIMITERS
    ],
)
def test_a_limiter_adapter_refuses_at_once(lib, contend_target, ns):
    """pyrate-limiter (and fastapi-limiter over it) blocks by default until there is room: the
    adapter asks for its documented non-blocking try, and no row waits."""
    seen = measured(lib, contend_target.url, ns.key(lib.key))
    assert seen["admitted"] is True and seen["refused"] is True, seen
    assert seen["refused_s"] < SLACK, f"a hit on a full window took {seen['refused_s']:.2f} s to be refused"
