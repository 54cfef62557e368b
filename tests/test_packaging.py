"""The distribution: one import name (`contend`), every package listed, impl/models/loadtests inside it."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Repository folders and the package each installs as.
MAPPED = {
    "contend": "contend",
    "impl": "contend.impl",
    "models": "contend.models",
    "loadtests": "contend.loadtests",
}


def package_dirs() -> set[str]:
    """Every package the checkout holds, by its installed name."""
    found = set()
    for folder, name in MAPPED.items():
        for init in (ROOT / folder).rglob("__init__.py"):
            relative = init.parent.relative_to(ROOT / folder)
            found.add(".".join([name, *relative.parts]))
    return found


def test_every_package_is_listed_in_pyproject():
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert set(config["packages"]) == package_dirs(), "list every package in pyproject.toml"
    assert config["package-dir"] == {name: folder for folder, name in MAPPED.items()}


@pytest.mark.slow
@pytest.mark.soak  # .ci/run installs the wheel and checks its import names on every run
def test_the_wheel_installs_one_import_name(tmp_path):
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)],
        check=True,
        timeout=300,
    )
    (wheel,) = tmp_path.glob("contend-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"contend"}
    for needed in ("contend/impl/catalog.py", "contend/models/base.py", "contend/loadtests/registry.py"):
        assert needed in names
