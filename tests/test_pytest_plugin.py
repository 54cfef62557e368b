"""The pytest fixtures contend installs: a server, clients, namespaces, and the controlled scheduler."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import settings

from contend.impl.registry import NaiveRegistry
from contend.machines.settings import PROFILES
from contend.schedule import ReplayChooser, Status


def test_contend_namespace_is_empty_and_cleaned(contend_namespace, contend_client):
    contend_client.set(contend_namespace.key("x"), 1)
    assert contend_namespace.count() == 1


def test_contend_scheduler_interleaves_clients_as_told(contend_scheduler, contend_target, contend_namespace):
    conns = [contend_target.client() for _ in range(2)]
    try:
        for conn in conns:
            conn.ping()
            contend_scheduler.add_client(connection=conn)
        registries = [NaiveRegistry(conn, contend_namespace.prefix) for conn in conns]
        for i, registry in enumerate(registries):
            contend_scheduler.start(i, lambda r=registry: r.register("a"), "register('a')")
        # c0 HGET, c1 HGET, c0 INCR, c0 HSETNX, c1 INCR, c1 HSETNX: the naive registry's race.
        contend_scheduler.run_all(ReplayChooser([0, 1, 0, 0, 1, 1, 0]))
        errors = [c.outcome.error for c in contend_scheduler.clients if c.outcome.error]
        assert len(errors) == 1 and "Failed to register" in str(errors[0])
        assert all(c.status is Status.IDLE for c in contend_scheduler.clients)
    finally:
        for conn in conns:
            conn.close()


PROFILES_SUITE = """
import os

from hypothesis import settings


def test_profiles():
    for name in ("contend-ci", "contend-dev", "contend-thorough"):
        settings.get_profile(name)  # registered by the plugin, without a conftest.py
    assert settings.get_profile("contend-ci").derandomize
    assert settings.get_profile("contend-ci").max_examples == 50
    # Hypothesis's own `ci` profile (loaded when CI is set) is not replaced
    assert settings.get_profile("ci").max_examples != 50
    loaded = settings.get_current_profile_name()
    expected = os.environ["EXPECTED_PROFILE"]
    assert loaded == expected if expected else not loaded.startswith("contend-"), loaded
"""


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ((), ""),  # installing contend does not change a suite's settings: default, or ci under CI
        (("--hypothesis-profile", "contend-ci"), "contend-ci"),
        (("--hypothesis-profile", "contend-thorough"), "contend-thorough"),
    ],
)
@pytest.mark.slow
def test_the_plugin_registers_the_profiles_and_loads_none(pytester, monkeypatch, args, expected):
    """In a fresh pytest process outside this repository (no conftest.py loads a profile)."""
    monkeypatch.setenv("EXPECTED_PROFILE", expected)
    pytester.makepyfile(test_profiles=PROFILES_SUITE)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)


def test_this_repository_defaults_to_contend_ci():
    """conftest.py loads contend-ci unless --hypothesis-profile says otherwise."""
    assert settings.get_current_profile_name() in PROFILES


@pytest.mark.slow
def test_the_documented_contend_namespace_example_runs_as_written(pytester):
    """docs/TESTING.md's example of the fixture, run verbatim in a suite of its own."""
    text = (Path(__file__).resolve().parents[1] / "docs" / "TESTING.md").read_text()
    (example,) = re.findall(r"<!-- contend-namespace-example -->\n```python\n(.*?)```", text, re.S)
    pytester.makepyfile(test_example=example)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-n", "0")
    result.assert_outcomes(passed=1)
