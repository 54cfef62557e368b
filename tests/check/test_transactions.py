"""The transaction battery of `contend check`: correct banks pass, known-bad ones are caught only for
properties the catalog says they violate."""

from __future__ import annotations

import pytest

from contend.check.battery import run_battery
from contend.check.framework import CheckOptions
from contend.impl import catalog
from contend.subject.resolve import user_subject
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


class SloppyDottedBank:
    """Keys `<namespace>.accounts.<account>`; a transfer to an unknown account creates it (INCRBY)
    before it finds the source too short and raises: a write on bad input, outside `<namespace>:`."""

    def __init__(self, client, namespace):
        self.client, self.ns = client, namespace

    def open(self, account, balance):
        self.client.set(f"{self.ns}.accounts.{account}", balance)

    def transfer(self, src, dst, amount):
        if amount <= 0 or src == dst:
            raise ValueError("refused")
        self.client.incrby(f"{self.ns}.accounts.{dst}", 0)
        if self.client.get(f"{self.ns}.accounts.{src}") is None:
            raise KeyError(src)
        raise KeyError(dst)

    def balances(self, accounts):
        return {a: int(self.client.get(f"{self.ns}.accounts.{a}")) for a in accounts}


def test_bad_input_sees_the_keys_a_bank_names_outside_the_namespace_prefix(contend_target, ns):
    subject = user_subject(f"{__name__}:SloppyDottedBank", "transaction", contend_target)
    (row,) = run_battery(contend_target, [subject], CheckOptions(), ns, only_checks=["bad-input"])
    (result,) = row.failed
    assert result.detail.startswith("transfer('a', 'nobody', 5) raised KeyError but changed "), result.detail
    assert result.detail.endswith(".accounts.nobody"), result.detail
    assert not list(ns.keys()), "cleaned up, separator and all"
