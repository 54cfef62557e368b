"""The Hypothesis settings every scheduled state machine runs under, and the pytest profiles.

`machine_settings` is the one builder: `contend check` (derandomized, a fixed
seed), `contend.machines.hunt` (a seed per run), `contend.testing` and the CI
gate (the loaded pytest profile) all call it. The profiles, registered by the
pytest plugin (`--hypothesis-profile NAME`): `contend-ci` (derandomized and
bounded, so a failure recurs on every rerun; this repository's default),
`contend-dev` and `contend-thorough` (fresh seeds, failing examples kept in
`.hypothesis/examples` and replayed first). They are prefixed so as not to
replace Hypothesis's own `ci` profile, which it loads when the CI variable is set.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from hypothesis import HealthCheck, Phase, Verbosity, settings
from hypothesis import strategies as st
from hypothesis.internal.conjecture import engine
from hypothesis.stateful import RuleBasedStateMachine
from hypothesis.strategies._internal.featureflags import FeatureFlags  # swarm testing's flags

#: Rules per example: enough for a race of a few clients, short enough to shrink fast.
STATEFUL_STEPS = 20


def machine_settings(
    max_examples: int,
    *,
    shrink: bool | None = True,
    derandomize: bool | None = True,
    parent: settings | None = None,
) -> settings:
    """Settings for `run_state_machine_as_test` on a scheduled machine.

    With `parent` (the gate passes the loaded profile) its seed policy and
    example database stand; without, no database is used. `shrink` and
    `derandomize` None keep what the parent says; `shrink` False also skips
    shrinking (phases explicit and generate only).
    """
    fixed: dict[str, object] = {
        "max_examples": max_examples,
        "deadline": None,
        "stateful_step_count": STATEFUL_STEPS,
        "suppress_health_check": list(HealthCheck),
        "report_multiple_bugs": False,
        "print_blob": True,  # the reproduce_failure blob that `contend check --replay` takes
    }
    if parent is None:
        fixed["database"] = None
        # contend prints its own evidence: no "Failing test case", `state = ...` lines or shrink
        # warnings of Hypothesis's on stdout (the replay blob still comes, as a note on the error).
        fixed["verbosity"] = Verbosity.quiet
    if derandomize is not None:
        fixed["derandomize"] = derandomize
    if shrink is not None:
        fixed["phases"] = [Phase.explicit, Phase.generate, *([Phase.shrink] if shrink else [])]
    return settings(parent, **fixed) if parent is not None else settings(**fixed)  # type: ignore[arg-type]


#: The profiles `register_profiles` registers.
CI_PROFILE = "contend-ci"
DEV_PROFILE = "contend-dev"
THOROUGH_PROFILE = "contend-thorough"
PROFILES = (CI_PROFILE, DEV_PROFILE, THOROUGH_PROFILE)


def register_profiles() -> None:
    """Register `contend-ci`, `contend-dev` and `contend-thorough` (none is loaded: a suite picks
    one with `--hypothesis-profile NAME` or `settings.load_profile(NAME)`). Idempotent."""
    settings.register_profile(
        CI_PROFILE,
        derandomize=True,
        deadline=None,
        max_examples=50,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile(DEV_PROFILE, deadline=None, max_examples=100, print_blob=True)
    settings.register_profile(
        THOROUGH_PROFILE,
        deadline=None,
        max_examples=2000,
        phases=list(Phase),
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )


@contextlib.contextmanager
def shrink_budget(seconds: float) -> Iterator[None]:
    """Hypothesis stops shrinking a failing example after `seconds` (its own limit is 300 s, and
    settings have no option for it), keeping the smallest found so far: the bound is the engine's
    module constant, read each time shrinking starts, so it is set for the block and put back.
    tests/machines/test_redlock_shrink.py fails should a release of Hypothesis move it."""
    before = engine.MAX_SHRINKING_SECONDS
    engine.MAX_SHRINKING_SECONDS = seconds  # type: ignore[assignment]
    try:
        yield
    finally:
        engine.MAX_SHRINKING_SECONDS = before


class _SwarmBut(st.SearchStrategy[Any]):
    """Hypothesis's swarm testing (a random subset of the rules off for a whole example), but
    the rules named in `keep` are always on."""

    def __init__(self, keep: frozenset[str]) -> None:
        super().__init__()
        self.keep = sorted(keep)

    def do_draw(self, data: Any) -> Any:
        return FeatureFlags(data, enabled=self.keep)


def keep_enabled(machine: RuleBasedStateMachine, keep: frozenset[str]) -> None:
    """Never let swarm testing turn off the rules in `keep` for `machine`'s examples (left as it
    is if this Hypothesis draws its rules some other way)."""
    strategy: Any = getattr(machine, "_rules_strategy", None)
    if keep and hasattr(strategy, "enabled_rules_strategy"):
        strategy.enabled_rules_strategy = st.shared(_SwarmBut(keep), key=("enabled rules", machine))
