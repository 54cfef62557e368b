"""The README's two commands are the ones CI runs, and the manual's getting-started page shows the
same two. (Every contend command of the README and docs/ parses: tests/test_docs.py.)"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def setup_commands(page: Path = ROOT / "README.md") -> list[str]:
    text = page.read_text()
    section = text.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.+?)\n```", section)


def test_exactly_two_setup_commands():
    main_job, tests = setup_commands()
    assert main_job.endswith("contend check")
    assert tests.endswith("pytest")


def test_ci_installs_and_tests_as_the_readme_says():
    _, tests = setup_commands()
    install, _, test_command = tests.rpartition(" && ")
    ci = (ROOT / ".ci" / "run").read_text()
    ci_install = install.replace("pip install -e", "pip install -q -e")
    assert ci_install in ci, f"{install!r} not in .ci/run"
    assert re.search(rf"^{re.escape(test_command)}$", ci, re.M), f"{test_command!r} not in .ci/run"


def test_getting_started_shows_the_readmes_two_commands():
    assert setup_commands(ROOT / "docs" / "getting-started.md") == setup_commands()


def test_ci_builds_the_manual_strictly_between_the_types_and_the_tests():
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    order = [
        lines.index(step)
        for step in (".venv/bin/mypy", ".venv/bin/mkdocs build --strict", ".venv/bin/pytest")
    ]
    assert order == sorted(order)
