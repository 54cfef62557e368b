"""Each adapter's one-line fidelity reason, checked: what it passes the library is what the
library documents (units, defaults), so that the adapter creates no defect of its own.

Every row's probe (`fidelity(client, key)`, or `fidelity_async`) runs against a real server:
here in this process where the library is installed (the libs extra), else in the row's own
environment (slow: made with pip when it is not cached; skipped when no package index answers).
"""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
import redis.asyncio

from contend.scoreboard.environments import Environment, EnvironmentFailed, cache_root, worker_environ
from contend.scoreboard.libraries import LIBRARIES
from contend.scoreboard.library import Library

ADAPTED = [lib for lib in LIBRARIES if lib.adapter]


def importable(lib: Library) -> bool:
    """Is the row's own distribution installed here (not another that installs the same name)?"""
    try:
        lib.version()
        lib.adapter_module()
    except Exception:
        return False
    return True


def probe_here(lib: Library, url: str, key: str) -> str:
    module = lib.adapter_module()
    if hasattr(module, "fidelity"):
        client = redis.Redis.from_url(url)
        try:
            return module.fidelity(client, key)
        finally:
            client.close()

    async def run() -> str:
        client = redis.asyncio.Redis.from_url(url)
        try:
            return await module.fidelity_async(client, key)
        finally:
            await client.aclose()

    return asyncio.run(run())


@pytest.mark.parametrize("lib", ADAPTED, ids=lambda lib: lib.key)
def test_every_adapter_states_its_fidelity_in_one_line(lib):
    source = importlib.util.find_spec(lib.adapter.split(":")[0]).origin
    text = Path(source).read_text()
    assert "\nFIDELITY = " in text and ("def fidelity(" in text or "def fidelity_async(" in text)


@pytest.mark.parametrize("lib", [lib for lib in ADAPTED if importable(lib)], ids=lambda lib: lib.key)
def test_the_adapter_passes_what_the_library_documents(lib, contend_target, ns):
    assert lib.adapter_module().FIDELITY
    seen = probe_here(lib, contend_target.url, ns.key(lib.key))
    assert "→" in seen or "attempt" in seen, seen


@pytest.mark.slow
@pytest.mark.parametrize("lib", [lib for lib in ADAPTED if not importable(lib)], ids=lambda lib: lib.key)
def test_the_adapter_passes_what_the_library_documents_in_its_own_environment(lib, contend_target, ns):
    env = Environment(lib.requirements, cache_root(), no_deps=lib.no_deps)
    try:
        path = env.ensure()
    except EnvironmentFailed as exc:
        if "No matching distribution" in str(exc) or "connection" in str(exc).lower():
            pytest.skip(f"no package index answers here: {exc}")
        raise
    module, _ = lib.adapter.split(":")
    code = (
        "import sys, asyncio, redis, redis.asyncio, importlib; m = importlib.import_module(sys.argv[1]); "
        "print(m.fidelity(redis.Redis.from_url(sys.argv[2]), sys.argv[3]) if hasattr(m, 'fidelity') "
        "else asyncio.run(m.fidelity_async(redis.asyncio.Redis.from_url(sys.argv[2]), sys.argv[3])))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, module, contend_target.url, ns.key(lib.key)],
        capture_output=True,
        text=True,
        env=worker_environ(path),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # The probe's own assertions are the check; it says what it saw (a TTL's unit as "ms → PTTL",
    # or, for a lock without a TTL or a queue, the commands it found the library sending).
    assert done.stdout.strip(), "the probe said nothing of what it saw"


def test_a_probe_catches_an_adapter_that_gets_the_unit_wrong(contend_target, ns, monkeypatch):
    """python-redis-lock takes seconds: an adapter that handed it milliseconds would hold a lock
    1000 times too long, and its probe says so."""
    module = pytest.importorskip("contend.adapters.python_redis_lock")
    monkeypatch.setattr(module, "whole_seconds", lambda ttl_ms: ttl_ms)
    with pytest.raises(AssertionError, match="ttl_ms=3000 gave TTL 3000 s"):
        module.fidelity(redis.Redis.from_url(contend_target.url), ns.key("wrong-unit"))


def test_a_probe_catches_a_lease_of_zero_passed_as_no_expiry(contend_target, ns, monkeypatch):
    """walrus reads ttl 0 as "never expires": an adapter that passed 0 would make a lock without
    a lease, and its probe says so."""
    module = pytest.importorskip("contend.adapters.walrus")
    real = module.walrus.Database.lock
    monkeypatch.setattr(module.walrus.Database, "lock", lambda db, name, ttl=None: real(db, name, ttl=0))
    with pytest.raises(AssertionError, match="gave PTTL -1 ms"):
        module.fidelity(redis.Redis.from_url(contend_target.url), ns.key("no-expiry"))
