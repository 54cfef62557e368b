"""Project-wide pytest set-up: the Hypothesis profiles (`ci` is the default; see contend.machines.settings)."""

from hypothesis import settings

from contend.machines.settings import register_profiles

register_profiles()
# `--hypothesis-profile NAME` (Hypothesis's own option) overrides this.
settings.load_profile("ci")
