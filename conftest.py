"""Project-wide pytest set-up: Hypothesis profiles (`ci` is the default)."""

from hypothesis import HealthCheck, Phase, settings

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
# `--hypothesis-profile NAME` (Hypothesis's own option) overrides this.
settings.load_profile("ci")
