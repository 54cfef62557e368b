"""The scoreboard's findings, reproduced without contend: the failure is the library's own.

Each reproduction is a script of under 40 lines (plain redis-py and the library) that runs on
its own against any Redis; here each runs on the embedded server, and what it saw must be the
defect its finding describes.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from contend.scoreboard.expected import FINDINGS

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
    "cashews_cancelled_unlock": {"ttl_left": 60, "b_acquired": False},
    "pottery_nextid_contention": {"all_ids_distinct": True, "some_draws_raised": True},
}
LIBRARY_OF = {
    "sherlock_no_expiry": "sherlock",
    "celery_once_clear_lock": "celery_once",
    "celery_singleton_unlock": "celery_singleton",
    "dramatiq_late_release": "dramatiq",
    "redis_semaphore_crash": "redis_semaphore",
    "redis_semaphore_token_reuse": "redis_semaphore",
    "cashews_cancelled_unlock": "cashews",
    "pottery_nextid_contention": "pottery",
}


def test_every_finding_has_a_short_reproduction_that_is_run_here():
    for finding in FINDINGS:
        path = ROOT / finding.reproduction
        assert not finding.sometimes or len(finding.sometimes) > 20, "say what a run depends on"
        assert path.is_file(), finding.reproduction
        assert len(path.read_text().splitlines()) < 40, f"{finding.reproduction} is 40 lines or more"
        assert path.stem in SEEN, f"{path.stem} is not run by this test"


def test_every_finding_says_whether_the_tracker_knows_it():
    for finding in FINDINGS:
        assert finding.tracker.startswith(("https://", "not found in the tracker", "related")), (
            finding.tracker
        )


@pytest.mark.parametrize("name", sorted(SEEN))
def test_the_reproduction_shows_the_defect(name, contend_target, ns):
    pytest.importorskip(LIBRARY_OF[name])
    module = importlib.import_module(f"tests.scoreboard.reproductions.{name}")
    assert module.reproduce(contend_target.url, ns.key(name)) == SEEN[name]
