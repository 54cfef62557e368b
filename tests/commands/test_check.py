"""`contend check`: exit codes in --help, --impl (passing, racy, protocol errors), the check table."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from contend.cli import main

SMALL = ["--serial-names", "100", "--burst-rounds", "5", "--schedule-examples", "10", "--no-shrink"]


def test_check_help_explains_exit_codes(capsys):
    with pytest.raises(SystemExit):
        main(["check", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "--redis-url" in out and "known-bad" in out and "Exit 0 when both hold" in out


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


def test_an_unsupported_redis_py_is_refused_before_anything_starts(monkeypatch, capsys):
    import redis

    monkeypatch.setattr(redis, "__version__", "9.0.0")
    assert main(["check", "--family", "registry"]) == 2
    err = capsys.readouterr().err
    assert "redis-py 9.0.0" in err and "pip install 'redis>=" in err and "Traceback" not in err
