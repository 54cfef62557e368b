"""examples/: the GitHub Actions workflow parses, and every contend command in it exists as written."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import yaml

from contend.cli import build_parser
from contend.commands import arguments

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / "examples" / "github-actions.yml"


def _contend_commands(workflow: dict) -> list[list[str]]:
    """Each `contend …` command of the workflow's run steps, split as the shell would, with the
    workflow's env variables expanded."""
    env = {k: str(v) for k, v in workflow.get("env", {}).items()}
    commands = []
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            for line in str(step.get("run", "")).splitlines():
                words = shlex.split(line)
                if words[:1] == ["contend"]:
                    commands.append([_expand(w, env) for w in words])
    return commands


def _expand(word: str, env: dict[str, str]) -> str:
    for name, value in env.items():
        word = word.replace(f"${{{name}}}", value).replace(f"${name}", value)
    return word


def test_the_workflow_is_valid_yaml_with_the_steps_a_gate_needs():
    workflow = yaml.safe_load(WORKFLOW.read_text())
    # PyYAML reads the key `on` as True (YAML 1.1); GitHub reads it as the triggers.
    assert workflow.get("on", workflow.get(True)) is not None
    (job,) = workflow["jobs"].values()
    uses = [step.get("uses", "") for step in job["steps"]]
    assert any(u.startswith("actions/checkout@") for u in uses)
    assert any(u.startswith("actions/setup-python@") for u in uses)
    assert any(u.startswith("actions/upload-artifact@") for u in uses)
    assert job["timeout-minutes"] <= 90


def test_every_contend_command_in_it_parses_without_deprecated_spellings(monkeypatch, capsys):
    monkeypatch.setattr(arguments, "_warned", set())
    commands = _contend_commands(yaml.safe_load(WORKFLOW.read_text()))
    assert [c[1] for c in commands] == ["check", "stress"]
    for words in commands:
        argv = words[1:]
        try:
            args = build_parser(argv).parse_args(argv)
        except SystemExit as exc:  # argparse: an unknown option or a bad value
            pytest.fail(f"{shlex.join(words)}: {capsys.readouterr().err} (exit {exc.code})")
        assert args.impl == "mypackage.locks:make_lock" and args.kind == "lock"
        assert args.junit_xml and args.json, "the gate keeps its JUnit XML and JSON"
    assert capsys.readouterr().err == "", "no deprecated spelling in the example"
