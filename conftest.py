"""Project-wide pytest set-up: this repository's suites run under the `contend-ci` Hypothesis profile.

The contend pytest plugin registers the profiles `contend-ci`, `contend-dev` and
`contend-thorough` (contend.machines.settings); `--hypothesis-profile NAME`
(Hypothesis's own option) overrides the default loaded here.

`-n auto` (pyproject.toml) starts one pytest-xdist worker more than the machine has cores: a
third of a worker's time is spent waiting (on servers it started, on subprocesses, on Locust),
and on 2 cores 3 workers ran the suite in 535 s where 2 took 620 s. The tests marked slow are
handed out first, so that the last minutes are not one worker finishing a 30 s test alone.
"""

import os

from hypothesis import settings

from contend.machines.settings import CI_PROFILE

settings.load_profile(CI_PROFILE)


def pytest_xdist_auto_num_workers(config: object) -> int:
    """The worker count `-n auto` means here: the cores this process may use, plus two. A worker
    spends much of its time waiting (on servers, subprocesses, Locust, a lease running out): on 2
    cores the suite took 483 s with three workers and 411 s with four, using the CPU 87% and 95%."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return cores + 2


def pytest_collection_modifyitems(items: list) -> None:
    """Slow tests first (a stable sort: every worker collects the same order, as xdist needs)."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
