"""impl.transactions: every bank of the catalog moves, refuses and audits alike; bad input writes nothing."""

from __future__ import annotations

import pytest

from contend.impl import catalog
from contend.impl.transactions import TransferError, UnknownAccount

BANKS = [pytest.param(i, id=i.name) for i in catalog.family("transaction")]


@pytest.mark.parametrize("impl", BANKS)
def test_a_bank_moves_refuses_and_audits(impl, client, ns):
    bank = impl.factory(client, ns.prefix)
    bank.open("a", 10)
    bank.open("b", 5)
    assert bank.transfer("a", "b", 7) is True
    assert bank.transfer("a", "b", 4) is False  # a holds 3
    assert bank.balances(["a", "b"]) == {"a": 3, "b": 12}


@pytest.mark.parametrize("impl", BANKS)
def test_bad_input_is_refused_before_anything_is_written(impl, client, ns):
    bank = impl.factory(client, ns.prefix)
    bank.open("a", 10)
    bank.open("b", 10)
    before = {k: client.get(k) for k in client.scan_iter(f"{ns.prefix}:*")}
    for src, dst, amount in [("a", "b", 0), ("a", "b", -1), ("a", "b", True), ("a", "a", 1)]:
        with pytest.raises(TransferError):
            bank.transfer(src, dst, amount)
    for src, dst in [("a", "nobody"), ("nobody", "a")]:
        with pytest.raises(UnknownAccount, match="no account called 'nobody'"):
            bank.transfer(src, dst, 1)
    with pytest.raises(UnknownAccount):
        bank.balances(["a", "nobody"])
    assert {k: client.get(k) for k in client.scan_iter(f"{ns.prefix}:*")} == before
