"""The `contend` command line: help, errors, --impl, and the check table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from contend.cli import main

SMALL = ["--serial-names", "100", "--burst-rounds", "5", "--schedule-examples", "10", "--no-shrink"]


def test_help_lists_the_commands(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for command in ("check", "bench", "server"):
        assert command in out


def test_check_help_explains_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--redis-url" in out and "known-bad" in out and "Exit 0 when both hold" in out


def test_server_info(capsys):
    assert main(["server", "--info"]) == 0
    out = capsys.readouterr().out
    assert "version:" in out and ("Redis" in out or "Valkey" in out)


def test_bad_numbers_are_refused(capsys):
    with pytest.raises(SystemExit) as info:
        main(["check", "--serial-names", "0"])
    assert info.value.code == 2
    assert "must be > 0" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["check", "stress", "load"])
@pytest.mark.parametrize("prefix", ["", "  "])
def test_blank_namespace_is_refused(command, prefix, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--namespace", prefix])
    assert info.value.code == 2
    assert "--namespace: must be a non-empty key prefix" in capsys.readouterr().err


def test_unknown_implementation_name(capsys):
    assert main(["check", "--only", "nosuch"]) == 2
    assert "no implementation called 'nosuch'" in capsys.readouterr().err


def test_user_implementation_passes(capsys, tmp_path):
    report = tmp_path / "out.json"
    code = main(
        [
            "check",
            "--impl",
            "tests.fixtures.user_registry:make",
            "--kind",
            "registry",
            "--json",
            str(report),
            *SMALL,
        ]
    )
    out = capsys.readouterr().out
    assert code == 0, out
    data = json.loads(report.read_text())
    (row,) = data["rows"]
    assert row["implementation"] == "tests.fixtures.user_registry:make"
    assert row["verdict"] == "pass"
    assert {c["check"] for c in row["checks"]} >= {"model", "serial", "burst-one-name", "bad-input"}


def test_racy_user_implementation_fails(capsys):
    code = main(["check", "--impl", "tests.fixtures.user_registry:make_racy", *SMALL])
    out = capsys.readouterr().out
    assert code == 1
    assert "FAIL" in out and "burst-one-name" in out and "Failed to register" in out


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("tests.fixtures.user_registry:broken", "without lookup(name) -> int | None"),
        ("tests.fixtures.user_registry:wrong_arity", "factory is called as factory(client"),
        ("tests.fixtures.user_registry:NOT_CALLABLE", "not a callable factory"),
        ("tests.fixtures.user_registry:missing", "has no attribute 'missing'"),
        ("no_such_module_here:make", "cannot import 'no_such_module_here'"),
        ("just-a-name", "expected package.module:factory"),
    ],
)
def test_user_implementation_protocol_errors(spec, message, capsys):
    assert main(["check", "--impl", spec]) == 2
    captured = capsys.readouterr()
    assert message in captured.err
    if spec != "tests.fixtures.user_registry:broken":  # only the object's methods need a server to probe
        assert "embedded Redis" not in captured.out, "a bad --impl should fail before a server starts"


@pytest.mark.slow
def test_contend_check_registry_table():
    """The README's main job, as a user runs it: a separate process, its own server."""
    result = subprocess.run(
        [sys.executable, "-m", "contend.cli", "check", "--family", "registry", *SMALL],
        capture_output=True,
        text=True,
        timeout=300,
        env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    rows = {line.split()[1]: line for line in result.stdout.splitlines() if line.startswith("│")}
    for bad in ("naive", "seed_transaction", "seed_layout"):
        assert rows[bad].rstrip(" │").endswith("caught"), rows[bad]
    for good in ("watch", "lock_first", "lua", "seed_layout_lua"):
        assert rows[good].rstrip(" │").endswith("pass"), rows[good]
    assert "all as expected" in result.stdout


@pytest.mark.slow
def test_bench_registry_reports_ratios(capsys, tmp_path):
    out = tmp_path / "bench.json"
    code = main(
        ["bench", "registry", "--seconds", "0.2", "--clients", "2", "--batch", "100", "--json", str(out)]
    )
    assert code == 0
    data = json.loads(out.read_text())
    assert data["raw_one"]["ops"] > 0
    names = {row["name"] for row in data["rows"]}
    assert {"naive", "watch", "lock_first", "lua"} <= names
    for row in data["rows"]:
        assert row["one_ratio"] > 0 and row["batch_seconds"] > 0
    assert "× raw" in capsys.readouterr().out


@pytest.mark.slow
def test_bench_locks_reports_the_token_target(capsys):
    assert main(["bench", "locks", "--seconds", "0.2", "--clients", "2"]) == 0
    assert "target ≥ 0.45×" in capsys.readouterr().out
