"""Project-wide pytest set-up: this repository's suites run under the `contend-ci` Hypothesis profile.

The contend pytest plugin registers the profiles `contend-ci`, `contend-dev` and
`contend-thorough` (contend.machines.settings); `--hypothesis-profile NAME`
(Hypothesis's own option) overrides the default loaded here.
"""

from hypothesis import settings

from contend.machines.settings import CI_PROFILE

settings.load_profile(CI_PROFILE)
