"""The schedule check: a failure found before the budget runs out is reported, shrunk or not."""

from __future__ import annotations

from typing import Any

import pytest

from contend.check.framework import CheckContext, CheckFailed, CheckOptions
from contend.check.schedule import SCHEDULE, _evidence
from contend.impl.catalog import REGISTRY_PROPERTIES, by_name
from contend.impl.registry import LuaRegistry
from contend.machines.base import PropertyViolated
from contend.machines.family import family_machine
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


def test_shrinking_stops_at_its_budget_with_the_smallest_failure_and_its_replay(contend_target, ns):
    """--shrink-seconds: once shrinking has had its seconds, Hypothesis ends it and the check
    reports the smallest failure found by then, replayable, saying shrinking stopped early."""
    factory = lambda client, namespace: MiscountingRegistry(client, namespace, registry="miscount")  # noqa: E731
    subject = Subject(
        "miscount", "registry", factory, known_bad=True, claims=REGISTRY_PROPERTIES, selector=("--only", "x")
    )
    options = CheckOptions(hunt_examples=50, shrink_seconds=0.001)
    ctx = CheckContext(contend_target, ns, factory, options, subject=subject)
    with pytest.raises(CheckFailed) as info:
        SCHEDULE.run(ctx)
    text = str(info.value)
    assert info.value.property == "tables-agree", text
    assert "shrinking stopped at its budget of 0.001 s, --shrink-seconds" in text
    assert "--replay 6." in text, "a stopped shrink still ends with a replayable example"
    assert "not shrunk further" not in text


@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("token", "lock"),
        ("lua", "registry"),
        ("single_flight", "single_flight"),
        ("list_queue", "queue"),
        ("fixed_window", "rate_limiter"),
        ("bank_watch", "transaction"),
    ],
)
def test_a_pass_names_each_claimed_property_whose_situation_never_arose(contend_target, ns, name, family):
    """One or two examples (seed fixed) of a correct implementation do not meet every situation a
    property is judged in: the pass names the claimed properties whose situation never arose,
    each with it in words."""
    impl = by_name(name)
    subject = Subject(name, family, impl.factory, claims=impl.claims)
    examples = 2 if family == "lock" else 1
    ctx = CheckContext(
        contend_target, ns, impl.factory, CheckOptions(schedule_examples=examples, seed=0), subject=subject
    )
    SCHEDULE.run(ctx)
    situations = family_machine(subject).situations_judged()
    assert ctx.not_exercised, "two examples met every situation: pick fewer"
    assert set(ctx.not_exercised) <= set(situations) & (impl.claims | {"progress"})
    assert all(ctx.not_exercised[p] == situations[p] for p in ctx.not_exercised)


def test_a_semaphore_is_not_said_to_miss_what_it_is_not_judged_for():
    """safe-release and stale-grant are judged on a lock of one holder only: a semaphore's schedule
    check never lists them as not exercised."""
    impl = by_name("semaphore")
    situations = family_machine(
        Subject("semaphore", "semaphore", impl.factory, claims=impl.claims)
    ).situations_judged()
    assert "mutual-exclusion" in situations
    assert "safe-release" not in situations and "stale-grant" not in situations


def test_a_failure_before_any_round_trip_says_so_rather_than_counting_zeros():
    subject = Subject("x", "registry", lambda c, n: None, selector=("--only", "x"))
    text, facts = _evidence(PropertyViolated("progress", "register('a') raised"), [], subject, None)
    assert text == "register('a') raised — before any round trip"
    assert facts["round_trips"] == 0 and "0 client(s)" not in text
