"""Each library in an environment of its own: made with pip under contend's cache, first on the
path of the worker that runs it, never installed into the environment contend runs in.

Two small distributions made here (no package index: pip runs with --no-index) both install the
import name `shadowed`, as redis-lock-py and python-redis-lock both install `redis_lock`.
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from contend.scoreboard.environments import (
    MARKER,
    Environment,
    EnvironmentFailed,
    cache_root,
    pip_reason,
    redis_requirement,
    worker_environ,
)


def wheel(folder: Path, dist: str, who: str, requires: str = "") -> Path:
    """A pure-Python wheel of `dist` 1.0 whose module `shadowed` says WHO = who (requiring
    `requires`, if given)."""
    info = f"{dist}-1.0.dist-info"
    needs = f"Requires-Dist: {requires}\n" if requires else ""
    files = {
        "shadowed.py": f"WHO = {who!r}\n",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n{needs}",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in files) + f"{info}/RECORD,,\n"
    path = folder / f"{dist}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, text in files.items():
            zf.writestr(name, text)
    return path


def who_in(path: Path | None) -> str:
    """What `import shadowed` finds in a process started as a worker over `path`."""
    done = subprocess.run(
        [sys.executable, "-c", "import shadowed; print(shadowed.WHO)"],
        capture_output=True,
        text=True,
        env=worker_environ(path),
        check=False,
    )
    return done.stdout.strip() or done.stderr.strip().splitlines()[-1]


@pytest.fixture
def no_index(monkeypatch):
    monkeypatch.setenv("PIP_NO_INDEX", "1")


def test_two_libraries_with_one_import_name_each_see_their_own(tmp_path, no_index):
    first = Environment((str(wheel(tmp_path, "lock-one", "one")),), tmp_path / "cache", with_redis=False)
    second = Environment((str(wheel(tmp_path, "lock-two", "two")),), tmp_path / "cache", with_redis=False)
    assert not first.ready
    assert first.ensure() != second.ensure()
    assert first.ready and (first.path / MARKER).is_file()
    assert first.distributions() == {"lock-one": "1.0"}
    assert (who_in(first.path), who_in(second.path)) == ("one", "two")
    # Nothing went into the environment this runs in.
    assert importlib.util.find_spec("shadowed") is None
    assert "ModuleNotFoundError" in who_in(None)


def test_an_environment_is_made_once_and_kept(tmp_path, no_index):
    env = Environment((str(wheel(tmp_path, "lock-one", "one")),), tmp_path / "cache", with_redis=False)
    made = env.ensure()
    (made / "shadowed.py").write_text("WHO = 'kept'\n")
    assert env.ensure() == made and who_in(made) == "kept"


def test_a_library_that_does_not_install_says_why_and_leaves_nothing(tmp_path, no_index):
    env = Environment(("contend-no-such-library==1.0",), tmp_path / "cache", with_redis=False)
    with pytest.raises(EnvironmentFailed, match=r"pip install contend-no-such-library==1.0 failed: .*"):
        env.ensure()
    assert not env.ready
    assert not any(env.path.parent.iterdir())


def test_a_library_whose_dependencies_conflict_is_installed_without_them(tmp_path, no_index):
    """arq pins redis-py below the range contend drives: its environment installs it with
    --no-deps after the other requirements (pip refuses it otherwise)."""
    (tmp_path / "capped").mkdir()
    capped = wheel(tmp_path / "capped", "capped-lib", "capped", requires="contend-no-such-dep<1")
    helper = wheel(tmp_path, "helper-lib", "helper")
    with pytest.raises(EnvironmentFailed, match="failed"):
        Environment((str(capped),), tmp_path / "cache", with_redis=False).ensure()
    env = Environment((str(helper),), tmp_path / "cache", with_redis=False, no_deps=(str(capped),))
    assert env.path != Environment((str(helper),), tmp_path / "cache", with_redis=False).path
    made = env.ensure()
    assert env.distributions() == {"capped-lib": "1.0", "helper-lib": "1.0"}
    assert who_in(made) == "helper"  # the first install's module stays


def test_the_path_depends_on_what_is_installed_and_on_python(tmp_path):
    a = Environment(("walrus==0.9.8",), tmp_path)
    assert a.path == Environment(("walrus==0.9.8",), tmp_path).path
    assert a.path != Environment(("walrus==0.9.7",), tmp_path).path
    assert a.installs == ("walrus==0.9.8", redis_requirement())
    assert a.path.parent.name == f"py{sys.version_info.major}.{sys.version_info.minor}"


def test_the_redis_py_an_environment_gets_is_the_one_contend_drives():
    spec = redis_requirement()
    assert spec.startswith("redis") and ">=6" in spec and "<" in spec, spec


def test_the_cache_folder_can_be_chosen(monkeypatch, tmp_path):
    monkeypatch.setenv("CONTEND_CACHE_DIR", str(tmp_path))
    assert cache_root() == tmp_path
    monkeypatch.delenv("CONTEND_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_root() == tmp_path / "xdg" / "contend"


def test_pip_says_why_in_one_line():
    stderr = "Collecting x\nERROR: Could not find a version that satisfies the requirement x\nERROR: No matching distribution found for x\n"
    assert pip_reason(stderr) == "No matching distribution found for x"
    assert pip_reason("") == "no output"
