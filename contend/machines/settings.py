"""The Hypothesis settings every scheduled state machine runs under, and the pytest profiles.

`machine_settings` is the one builder: `contend check` (derandomized, a fixed
seed), `contend.machines.hunt` (a seed per run) and the CI gate (the loaded
pytest profile) all call it. The profiles: `ci` (the default: derandomized
and bounded, so a failure recurs on every rerun), `dev` and `thorough` (fresh
seeds, failing examples kept in `.hypothesis/examples` and replayed first).
"""

from __future__ import annotations

from hypothesis import HealthCheck, Phase, settings

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
    if derandomize is not None:
        fixed["derandomize"] = derandomize
    if shrink is not None:
        fixed["phases"] = [Phase.explicit, Phase.generate, *([Phase.shrink] if shrink else [])]
    return settings(parent, **fixed) if parent is not None else settings(**fixed)  # type: ignore[arg-type]


def register_profiles() -> None:
    """The pytest profiles `ci` (default), `dev` and `thorough` (`--hypothesis-profile NAME`)."""
    settings.register_profile(
        "ci",
        derandomize=True,
        deadline=None,
        max_examples=50,
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
    settings.register_profile("dev", deadline=None, max_examples=100, print_blob=True)
    settings.register_profile(
        "thorough",
        deadline=None,
        max_examples=2000,
        phases=list(Phase),
        print_blob=True,
        suppress_health_check=[HealthCheck.too_slow],
    )
