"""The cancel check: async locks cancelled at every round trip of release() and acquire()."""

from __future__ import annotations

import pytest

from contend.cli import main


def check(capsys, *args: str) -> tuple[int, str]:
    code = main(["check", *args, "--check", "cancel"])
    return code, " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    "selector",
    [
        ["--only", "async_token"],
        ["--impl", "tests.fixtures.async_foreign.redispy_lock:make", "--kind", "lock"],
    ],
)
def test_a_release_that_survives_cancellation_passes(capsys, selector):
    code, out = check(capsys, *selector)
    assert code == 0, out
    assert "as expected: 1 correct passed" in out


@pytest.mark.parametrize(
    ("selector", "raised"),
    [
        (["--only", "async_early_clear"], "LockNotOwnedError"),
        # redis-py issue #3847: the release of the releases before PR #3900, copied for this test.
        (["--impl", "tests.fixtures.async_foreign.redispy_lock_3847:make", "--kind", "lock"], "LockError"),
    ],
)
def test_a_token_cleared_before_the_delete_is_awaited_is_caught(capsys, selector, raised):
    code, out = check(capsys, *selector)
    assert code == (0 if selector[0] == "--only" else 1), out  # the catalog's known-bad one: caught
    assert "liveness: crash-liveness" in out
    assert "release() cancelled before its command is sent, at round trip 1 of 1" in out
    assert f"release() again raised {raised}" in out and "the lease is orphaned" in out
    assert "c0 cancelled before its command is sent" in out, "the trace shows where the cancellation landed"
