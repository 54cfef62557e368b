"""The schedule check: a failure found before the budget runs out is reported, shrunk or not."""

from __future__ import annotations

from typing import Any

import pytest

from contend.check.framework import CheckContext, CheckFailed, CheckOptions
from contend.check.schedule import SCHEDULE
from contend.impl.catalog import REGISTRY_PROPERTIES
from contend.impl.registry import LuaRegistry
from contend.subject.subject import Subject


class MiscountingRegistry(LuaRegistry):
    """A correct registry whose count() is always one too many: every example fails at its end."""

    def count(self) -> int:
        return super().count() + 1


def test_a_failure_still_being_shrunk_when_the_budget_ends_is_reported(contend_target, ns):
    made: list[Any] = []

    def factory(client: Any, namespace: str) -> MiscountingRegistry:
        made.append(namespace)
        ctx.wrap_up_by = 0.0  # the budget is spent from the first example on: no second one starts
        return MiscountingRegistry(client, namespace, registry="miscount")

    subject = Subject("miscount", "registry", factory, known_bad=True, claims=REGISTRY_PROPERTIES)
    ctx = CheckContext(contend_target, ns, factory, CheckOptions(hunt_examples=50), subject=subject)
    with pytest.raises(CheckFailed) as info:
        SCHEDULE.run(ctx)
    assert made, "the machine ran"
    text = str(info.value)
    assert info.value.property == "tables-agree" and "names registered" in text, text
    assert "not shrunk further: the check's time budget ran out" in text
