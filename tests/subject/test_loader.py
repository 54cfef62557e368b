"""contend.subject.loader: `package.module:factory` loaded, or refused in one line before any
server is touched."""

from __future__ import annotations

import sys

import pytest

from contend.cli import main
from contend.subject.loader import factory_name, load_factory, user_factory
from contend.subject.protocols import ProtocolError


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A folder on sys.path for modules written by the test (removed from sys.modules after)."""
    monkeypatch.syspath_prepend(str(tmp_path))
    before = set(sys.modules)
    yield tmp_path
    for name in set(sys.modules) - before:
        del sys.modules[name]


def test_a_factory_is_loaded_by_module_and_name(package):
    (package / "good_impl.py").write_text("def make(client, key, ttl_ms):\n    return None\n")
    factory = load_factory("good_impl:make")
    assert factory.__name__ == "make" and factory_name(factory) == "good_impl:make"
    assert user_factory("good_impl:make", "lock") is factory


@pytest.mark.parametrize(
    ("spec", "said"),
    [
        ("no_colon", "expected package.module:factory"),
        ("nosuch_module_xyz:make", "cannot import 'nosuch_module_xyz'"),
        ("good_impl2:missing", "has no attribute 'missing'"),
        ("good_impl2:VALUE", "is a int, not a callable factory"),
    ],
)
def test_a_spec_that_names_no_factory_is_refused(package, spec, said):
    (package / "good_impl2.py").write_text("VALUE = 3\n")
    with pytest.raises(ProtocolError, match=said):
        load_factory(spec)


def test_a_module_with_a_syntax_error_is_refused_in_one_line(package):
    (package / "broken_syntax.py").write_text("def make(:\n")
    with pytest.raises(ProtocolError) as info:
        load_factory("broken_syntax:make")
    assert "broken_syntax.py, line 1" in str(info.value) and "\n" not in str(info.value)


def test_a_module_that_raises_at_import_is_refused_in_one_line(package):
    (package / "raises_at_import.py").write_text("raise RuntimeError('no config')\n")
    with pytest.raises(
        ProtocolError, match="importing 'raises_at_import' raised RuntimeError: no config"
    ) as info:
        load_factory("raises_at_import:make")
    assert f"at {package / 'raises_at_import.py'}, line 1;" in str(info.value)


def test_the_command_says_so_with_exit_2_and_no_traceback(package, capsys):
    (package / "raises_at_import2.py").write_text("raise RuntimeError('no config')\n")
    assert main(["check", "--impl", "raises_at_import2:make", "--kind", "lock"]) == 2
    err = capsys.readouterr().err
    assert "raised RuntimeError: no config" in err and "Traceback" not in err


def test_an_unknown_kind_is_refused(package):
    with pytest.raises(ProtocolError, match="--kind 'leaderboard' has no battery yet"):
        user_factory(lambda client, key, ttl_ms: None, "leaderboard")


#: Per kind: the factory's parameters one short of what the protocol calls it with, or (semaphore)
#: without the `limit` keyword it is given for several holders.
SHORT = {
    "lock": "client, key",
    "semaphore": "client, key, ttl_ms",
    "registry": "client",
    "single-flight": "client, key",
    "transaction": "client",
    "queue": "client",
    "rate-limiter": "client, key, limit",
}


@pytest.mark.parametrize("style", ["sync", "async"])
@pytest.mark.parametrize("kind", sorted(SHORT))
def test_a_factory_that_cannot_take_the_kinds_arguments_is_refused_before_any_check(
    package, capsys, kind, style
):
    """Every kind, synchronous or redis.asyncio code: exit 2, one line naming the call contend
    makes and the factory's own signature, before any server is looked for (a semaphore without
    `limit` was judged, and failed 'safety' on the TypeError). Nothing on stdout: the run's first
    line, naming its server, never came."""
    prefix = "async " if style == "async" else ""
    methods = "".join(
        f"    {prefix}def {m}(self, *a, **k):\n        return None\n" for m in ("acquire", "release")
    )
    module = f"short_{kind.replace('-', '_')}_{style}"
    (package / f"{module}.py").write_text(
        f"class Thing:\n{methods}\n\ndef make({SHORT[kind]}):\n    return Thing()\n"
    )

    assert main(["check", "--impl", f"{module}:make", "--kind", kind]) == 2
    printed = capsys.readouterr()
    lines = printed.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in printed.out + printed.err, printed
    assert "factory is called as factory(client" in lines[0]
    assert f"make({SHORT[kind]}) cannot take that" in lines[0], lines[0]
    assert printed.out == ""
