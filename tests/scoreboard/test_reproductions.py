"""The scoreboard's findings, reproduced without contend: the failure is the library's own.

Each reproduction is a script of under 40 lines (plain redis-py and the library) that runs on
its own against any Redis; here each runs on the embedded server, and what it saw must be the
defect its finding describes. A library installed here (the libs extra) runs in this process;
one that cannot share this environment (redis-lock-py installs `redis_lock`, as
python-redis-lock does) runs in its own (slow: made with pip when it is not cached).
"""

from __future__ import annotations

import contextlib
import importlib
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from contend.scoreboard.environments import Environment, EnvironmentFailed, cache_root, worker_environ
from contend.scoreboard.expected import FINDINGS
from contend.scoreboard.libraries import by_key
from contend.scoreboard.library import Library, LibraryMissing
from contend.servers.clock import EPOCH
from contend.servers.keyspace import Namespace
from contend.servers.target import Target

ROOT = Path(__file__).resolve().parents[2]

#: What each reproduction sees when the defect is there.
SEEN = {
    "sherlock_no_expiry": {
        "a_acquired": True,
        "key_exists_while_a_holds": False,  # EXPIRE key -1 deleted it
        "b_acquired_while_a_holds": True,
    },
    "celery_once_clear_lock": {
        "a_locked": True,
        "b_locked_after_a_expired": True,
        "c_locked_while_b_runs": True,
    },
    "celery_singleton_unlock": {
        "a_locked": True,
        "b_locked_after_a_expired": True,
        "c_locked_while_b_runs": True,
    },
    "dramatiq_late_release": {
        "a_acquired": True,
        "b_acquired_after_a_expired": True,
        "c_acquired_while_b_holds": True,
    },
    "redis_semaphore_crash": {"exists_ttl": -1, "second_acquired": False},
    "redis_semaphore_token_reuse": {
        "a_token": b"0",
        "b_token": b"0",
        "a_released": True,
        "c_token_while_b_holds": b"0",
    },
    "redis_semaphore_clock": {"a": b"0", "b_while_a_holds": b"0", "within_1_s": True},
    "cashews_cancelled_unlock": {"ttl_left": 60, "b_acquired": False},
    "pottery_nextid_contention": {"all_ids_distinct": True, "some_draws_raised": True},
    "redis_lock_py_backoff": {"b_acquired": True, "b_noticed_2_s_late": True},
    "beaker_release_race": {
        "a_acquired": True,
        "b_acquired_after_a_expired": True,
        "c_acquired_while_b_holds": True,
    },
    "beaker_reentrant_after_failed_release": {
        "a_acquired": True,
        "a_release_failed": True,
        "b_acquired": True,
        "a_acquired_again_while_b_holds": True,
    },
    "huey_lock_release": {"a_acquired": True, "b_refused": True, "c_acquired_while_a_holds": True},
    "pyrate_limiter_stale_stamp": {"a_admitted": True, "b_admitted": True, "entries_in_the_window": 2},
    "fastapi_limiter_stale_stamp": {"b_passed": True, "a_passed": True},
}


def row_of(name: str) -> Library:
    """The row whose finding this reproduction shows."""
    (key,) = {f.library for f in FINDINGS if Path(f.reproduction).stem == name}
    return by_key([key])[0]


def installed_here(lib: Library) -> bool:
    try:
        lib.version()
        lib.adapter_module()
    except LibraryMissing:
        return False
    return True


def cases() -> list:
    return [
        pytest.param(name, marks=() if installed_here(row_of(name)) else pytest.mark.slow, id=name)
        for name in sorted(SEEN)
    ]


def test_every_finding_has_a_short_reproduction_that_is_run_here():
    for finding in FINDINGS:
        path = ROOT / finding.reproduction
        assert path.is_file(), finding.reproduction
        assert len(path.read_text().splitlines()) < 40, f"{finding.reproduction} is 40 lines or more"
        assert path.stem in SEEN, f"{path.stem} is not run by this test"
        assert not finding.sometimes or len(finding.sometimes) > 20, "say what a run depends on"


def test_every_finding_says_whether_the_tracker_knows_it():
    for finding in FINDINGS:
        assert finding.tracker.startswith(("https://", "not found in the tracker", "related")), (
            finding.tracker
        )


@contextlib.contextmanager
def stepped_clock(name: str, target: Target, key: str) -> Iterator[None]:
    """redis_semaphore_clock waits for instants of the server's clock: A grabs at x.3 s, and B
    acquires at 5 to 9 ms past the next second. On a busy machine the real clock may run past
    that window before B reads it. Here the embedded server's clock stands at x.300000 until A's
    grab is stored, then at (x+1).005000, so the script meets its window on every run; after 10 s
    more (a script that has not finished) it goes back to real time, as the other scripts run."""
    if name != "redis_semaphore_clock" or target.clock is None:
        yield
        return
    clock, owner, done = target.clock, object(), threading.Event()
    client = redis.Redis.from_url(target.url)
    grabbed = f"{key}:0:GRABBED"  # the script's first try: namespace f"{key}:0"

    def drive() -> None:
        deadline = time.monotonic() + 30
        while not done.is_set() and not client.hlen(grabbed) and time.monotonic() < deadline:
            time.sleep(0.001)
        clock.set(owner, EPOCH + 1.005)
        done.wait(10)
        clock.give_back(owner)

    clock.take(owner, EPOCH + 0.3)
    driver = threading.Thread(target=drive, daemon=True)
    driver.start()
    try:
        yield
    finally:
        done.set()
        driver.join(5)
        clock.give_back(owner)
        client.close()


@pytest.mark.parametrize("name", cases())
def test_the_reproduction_shows_the_defect(name, contend_target, ns):
    with stepped_clock(name, contend_target, ns.key(name)):
        _reproduce(name, contend_target, ns)


def _reproduce(name: str, contend_target: Target, ns: Namespace) -> None:
    lib = row_of(name)
    key = ns.key(name)
    if installed_here(lib):
        module = importlib.import_module(f"tests.scoreboard.reproductions.{name}")
        assert module.reproduce(contend_target.url, key) == SEEN[name]
        return
    try:
        path = Environment(lib.requirements, cache_root(), no_deps=lib.no_deps).ensure()
    except EnvironmentFailed as exc:
        pytest.skip(f"no package index answers here: {exc}")
    code = (
        "import json, sys, runpy; m = runpy.run_path(sys.argv[1]); "
        "print(json.dumps(m['reproduce'](sys.argv[2], sys.argv[3]), default=repr))"
    )
    script = str(ROOT / "tests" / "scoreboard" / "reproductions" / f"{name}.py")
    done = subprocess.run(
        [sys.executable, "-c", code, script, contend_target.url, key],
        capture_output=True,
        text=True,
        env=worker_environ(path),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == json.loads(json.dumps(SEEN[name], default=repr))
