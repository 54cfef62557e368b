"""The transaction battery of `contend check`: correct banks pass, known-bad ones are caught only for
properties the catalog says they violate."""

from __future__ import annotations

import pytest

from contend.check.battery import run_battery
from contend.check.framework import CheckOptions
from contend.impl import catalog
from contend.subject.subject import catalog_subjects
from tests.check.test_battery import assert_matches_catalog

BANKS = catalog.family("transaction")


def run(name: str, target, ns, checks=(), **options):
    (subject,) = catalog_subjects(["transaction"], [name])
    sized = CheckOptions(
        shrink=False, schedule_examples=20, model_ops=100, burst_names_per_client=20, **options
    )
    (row,) = run_battery(target, [subject], sized, ns, only_checks=checks)
    return row


def test_the_quick_checks_pass_a_correct_bank_and_catch_an_unisolated_one(contend_target, ns):
    row = run("bank_watch", contend_target, ns, ["model", "bad-input", "lost-reply"])
    assert row.verdict == "pass", {r.check: r.detail for r in row.results}
    row = run("transfer_no_watch", contend_target, ns, ["burst"])
    assert (
        row.verdict == "caught"
        and {r.prop for r in row.failed} <= catalog.by_name("transfer_no_watch").violates
    )


@pytest.mark.soak
@pytest.mark.parametrize("impl", [pytest.param(i, id=i.name) for i in BANKS])
def test_battery_verdict_matches_the_catalog(impl, contend_target, ns):
    assert_matches_catalog(run(impl.name, contend_target, ns), impl)
