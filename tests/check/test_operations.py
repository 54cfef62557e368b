"""`--kind operations` through contend.testing and the command line: correct primitives in three
styles pass, each worked example's known-bad twin fails with a shrunk trace and a replay line
that runs the same example again."""

from __future__ import annotations

import re

import pytest

from contend.cli import main
from contend.impl.catalog import LINEARIZABLE
from contend.testing import ContendCheckFailed, check_operations
from tests.fixtures.operations import ASYNC_PRIMITIVES, PRIMITIVES

FIXTURES = "tests.fixtures.operations"
#: Real-time budgets no check here reaches: the evidence read here needs its shrunk replay line.
UNHURRIED = {"check_seconds": 600.0, "run_seconds": 900.0}


@pytest.mark.parametrize("module", [m for m, bad in PRIMITIVES if not bad])
def test_a_correct_primitive_passes(module, contend_target):
    (row,) = check_operations(f"{FIXTURES}.{module}:make", contend_target, schedule_examples=40)
    assert row.verdict == "pass", row
    assert [r.check for r in row.results] == ["schedule"]


def test_one_example_without_two_operations_at_once_is_not_exercised_and_says_so(contend_target):
    """Linearizability is only tested where operations overlap: the first example (seed fixed) ran
    them one at a time, and the pass says the situation never arose; two examples meet it."""
    impl = f"{FIXTURES}.stock_script:make"
    (row,) = check_operations(impl, contend_target, schedule_examples=1, seed=0)
    (result,) = row.results
    assert result.not_exercised == {LINEARIZABLE: "two operations under way at once"}
    (row,) = check_operations(impl, contend_target, schedule_examples=2, seed=0)
    assert row.results[0].not_exercised == {}


def test_a_model_is_used_instead_of_the_re_run(contend_target):
    from tests.fixtures.operations.stock_script import StockModel, make

    (row,) = check_operations(make, contend_target, model=StockModel, schedule_examples=40)
    assert row.verdict == "pass"
    assert row.subject.operations.model is StockModel


@pytest.mark.parametrize("module", [m for m, bad in ASYNC_PRIMITIVES if not bad])
def test_a_correct_async_primitive_passes(module, contend_target):
    """Code for redis.asyncio through contend.testing: async clients, and the re-run async too."""
    (row,) = check_operations(f"{FIXTURES}.{module}:make", contend_target, schedule_examples=40)
    assert row.subject.asynchronous
    assert row.verdict == "pass", row
    assert [r.check for r in row.results] == ["schedule"]


@pytest.mark.parametrize("module", [m for m, bad in ASYNC_PRIMITIVES if bad])
def test_a_known_bad_async_twin_is_caught_from_the_command_line(module, contend_target, capsys, monkeypatch):
    monkeypatch.chdir(__import__("pathlib").Path(__file__).resolve().parents[2])
    impl = f"{FIXTURES}.{module}:make"
    argv = ["check", "--redis-url", contend_target.url, "--impl", impl, "--kind", "operations"]
    code = main([*argv, "--seed", "0", "--no-shrink", "--check-seconds", "120"])
    out = capsys.readouterr().out
    assert code == 1, out
    assert "which no order of the operations consistent with real time gives" in out
    assert f"replay: contend check --impl {impl} --kind operations --replay" in out


@pytest.mark.slow
@pytest.mark.parametrize("module", [m for m, bad in PRIMITIVES if bad])
def test_a_known_bad_twin_fails_with_a_replay_line(module, contend_target, capsys, monkeypatch):
    impl = f"{FIXTURES}.{module}:make"
    with pytest.raises(ContendCheckFailed) as info:
        check_operations(impl, contend_target, **UNHURRIED)
    (row,) = info.value.rows
    (result,) = row.failed
    assert result.prop == LINEARIZABLE
    message = str(info.value)
    assert "which no order of the operations consistent with real time gives" in message
    (replay,) = re.findall(
        rf"replay: contend check --impl {re.escape(impl)} --kind operations --replay (\S+)", message
    )

    monkeypatch.chdir(__import__("pathlib").Path(__file__).resolve().parents[2])
    code = main(
        [
            "check",
            "--redis-url",
            contend_target.url,
            "--impl",
            impl,
            "--kind",
            "operations",
            "--replay",
            replay,
        ]
    )
    out = capsys.readouterr().out
    assert code == 1
    assert "linearizable" in out and "replay:" in out


@pytest.mark.slow
def test_the_pages_commands_give_the_verdicts_it_states(contend_target, capsys, monkeypatch):
    """docs/own-primitive.md's first block, run as written (on the session's server, no
    shrinking): the correct primitives pass (exit 0), the known-bad twins fail
    (exit 1)."""
    from pathlib import Path

    from tests.test_docs import contend_commands

    root = Path(__file__).resolve().parents[2]
    monkeypatch.chdir(root)
    commands = contend_commands(root / "docs" / "own-primitive.md")
    bad = {f"{FIXTURES}.{m}:make": known_bad for m, known_bad in PRIMITIVES}
    ran = []
    for words in commands[:4]:
        impl = words[words.index("--impl") + 1]
        # No shrinking: the verdicts are read here, not the evidence.
        quick = ["--no-shrink", "--check-seconds", "120"]
        code = main([*words[1:], "--redis-url", contend_target.url, *quick])
        capsys.readouterr()
        ran.append(impl)
        assert code == (1 if bad[impl] else 0), impl
    assert sorted(ran) == sorted(f"{FIXTURES}.{m}:make" for m, _ in PRIMITIVES if m != "seat_plain")


def test_the_json_names_the_family_as_its_schema_allows(contend_target, tmp_path, capsys, monkeypatch):
    import json

    import fastjsonschema

    from contend.ci.document import schema

    monkeypatch.chdir(__import__("pathlib").Path(__file__).resolve().parents[2])
    report = tmp_path / "check.json"
    argv = ["check", "--redis-url", contend_target.url, "--impl", f"{FIXTURES}.seat_plain:make"]
    code = main([*argv, "--kind", "operations", "--schedule-examples", "10", "--json", str(report), "-q"])
    capsys.readouterr()
    doc = json.loads(report.read_text())
    fastjsonschema.compile(schema("check"))(doc)
    assert code == 0 and doc["implementations"][0]["family"] == "operations"


def test_a_failure_from_the_api_names_the_model_in_its_replay_call(contend_target):
    """A factory and model given as objects: the replay call names both (a factory defined in a
    test cannot be imported by `contend check`, so the API call is printed instead)."""
    from tests.fixtures.operations.idempotency_check_then_set import IdempotencyModel
    from tests.fixtures.operations.idempotency_check_then_set import make as twin

    def make(client, namespace):
        return twin(client, namespace)

    with pytest.raises(ContendCheckFailed) as info:
        check_operations(
            make,
            contend_target,
            operations=f"{FIXTURES}.idempotency_check_then_set:OPERATIONS",
            model=IdempotencyModel,
            shrink=False,
        )
    message = str(info.value)
    assert "check_operations(make, target, operations='tests.fixtures.operations" in message
    assert "model=IdempotencyModel, replay='" in message
