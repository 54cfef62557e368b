"""The README's two commands are the ones CI runs, and every contend command it shows parses."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from contend.cli import build_parser
from contend.commands import arguments

ROOT = Path(__file__).resolve().parent.parent


def setup_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
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


def readme_contend_commands() -> list[list[str]]:
    """Every `contend …` command in the README's sh blocks, split as the shell would."""
    text = (ROOT / "README.md").read_text()
    commands = []
    for block in re.findall(r"```sh\n(.*?)```", text, re.S):
        for line in block.splitlines():
            for part in line.split("#", 1)[0].split(" && "):
                words = shlex.split(part)
                if words and words[0].endswith("/contend"):
                    commands.append(words)
    return commands


def test_every_contend_command_in_the_readme_parses_as_written(monkeypatch, capsys):
    """Options and values as written exist, and none is a deprecated spelling."""
    monkeypatch.setattr(arguments, "_warned", set())
    commands = readme_contend_commands()
    assert len(commands) >= 15
    for words in commands:
        argv = words[1:]
        try:
            build_parser(argv).parse_args(argv)
        except SystemExit as exc:
            if exc.code != 0:  # --help and --version exit 0
                pytest.fail(f"{shlex.join(words)}: {capsys.readouterr().err}")
    assert capsys.readouterr().err == "", "a README command uses a deprecated spelling"
