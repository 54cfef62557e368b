"""The scoreboard's findings, reproduced without contend: the failure is the library's own."""

from __future__ import annotations

import pytest

from contend.scoreboard.expected import FINDINGS
from tests.scoreboard.reproductions import sherlock_no_expiry


def test_every_finding_names_a_reproduction_that_exists():
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    for finding in FINDINGS:
        assert (root / finding.reproduction).is_file(), finding.reproduction


def test_sherlock_without_expiry_lets_two_clients_hold_the_lock(contend_target, ns):
    pytest.importorskip("sherlock")
    seen = sherlock_no_expiry.reproduce(contend_target.url, ns.key("sherlock"))
    assert seen == {
        "a_acquired": True,
        "key_exists_while_a_holds": False,  # EXPIRE key -1 deleted it
        "b_acquired_while_a_holds": True,
    }
