"""contend.models.bank: the bank's model and what a history of one must leave."""

from __future__ import annotations

from contend.models.bank import BankModel, explain_audit, explain_final

OPENING = {"a": 10, "b": 10}


def test_the_model_refuses_an_overdraft():
    model = BankModel(OPENING)
    ok, state = model.apply(model.init(), "transfer", ("a", "b", 10))
    assert ok is True and dict(state) == {"a": 0, "b": 20}
    refused, same = model.apply(state, "transfer", ("a", "b", 1))
    assert refused is False and same == state
    assert model.apply(state, "balances", ("b", "a"))[0] == (20, 0)


def test_final_balances_explained_by_each_transfer_once_or_not_at_all():
    move = ("a", "b", 3)
    assert explain_final(OPENING, [move], [], {"a": 7, "b": 13}) is None
    assert explain_final(OPENING, [], [move], {"a": 10, "b": 10}) is None
    assert "not the opening ones" in (explain_final(OPENING, [move], [], {"a": 4, "b": 16}) or "")
    assert "money was made" in (explain_final(OPENING, [move], [], {"a": 7, "b": 16}) or "")
    assert "below zero" in (explain_final(OPENING, [], [], {"a": -1, "b": 21}) or "")


def test_an_audit_must_see_the_opening_total():
    assert explain_audit(OPENING, {"a": 3, "b": 17}) is None
    assert "23 in total, not 20" in (explain_audit(OPENING, {"a": 10, "b": 13}) or "")
