"""contend.subject.operations: the operation list and the model of `--kind operations`, found
beside the factory or named, and every refusal one line before any server is touched."""

from __future__ import annotations

import pytest

from contend.cli import main
from contend.subject.operations import OPERATIONS_ATTRIBUTE
from contend.subject.protocols import ProtocolError
from contend.subject.resolve import load
from contend.subject.spec import EVERY_KIND, parse_spec

BAD = "tests.fixtures.operations.bad_inputs"
STOCK = "tests.fixtures.operations.stock_script"


def loaded(impl: str, **options):
    spec = parse_spec(impl, "operations", EVERY_KIND, **options)
    assert spec is not None
    return load(spec)


def test_the_list_beside_the_factory_is_found():
    subject = loaded(f"{STOCK}:make")
    assert subject.operations.names == ("restock", "reserve", "stock")
    assert subject.operations.model is None
    assert "--operations" not in subject.selector


def test_a_named_list_and_model_go_into_the_replay_line():
    subject = loaded(f"{BAD}:make", operations=f"{STOCK}:OPERATIONS", model=f"{STOCK}:StockModel")
    assert subject.operations.model.__name__ == "StockModel"
    assert subject.selector[-4:] == ("--operations", f"{STOCK}:OPERATIONS", "--model", f"{STOCK}:StockModel")


def test_an_async_primitive_is_found_async_before_any_server():
    """Operations that are coroutines (code for redis.asyncio) are no refusal: the row says async."""
    subject = loaded("tests.fixtures.operations.stock_async_watch:make")
    assert subject.asynchronous
    assert subject.operations.names == ("restock", "reserve", "stock")
    assert not loaded(f"{STOCK}:make").asynchronous


CASES = [
    ("an empty list", {"operations": f"{BAD}:EMPTY"}, "is empty: name at least one operation"),
    (
        "a name that is an attribute",
        {"operations": f"{BAD}:NOT_CALLABLE", "impl": "priced"},
        "operation 'price' names a int",
    ),
    ("a name that is nothing", {"operations": f"{BAD}:MISSING"}, "operation 'refund' names nothing"),
    ("no strategy", {"operations": f"{BAD}:NOT_A_STRATEGY"}, "is a int, not a Hypothesis strategy"),
    ("a strategy that cannot draw", {"operations": f"{BAD}:CANNOT_DRAW"}, "cannot draw: InvalidArgument"),
    ("st.nothing()", {"operations": f"{BAD}:DRAWS_NOTHING"}, "cannot draw anything"),
    ("a filter nothing passes", {"operations": f"{BAD}:FILTERED_AWAY"}, "cannot draw"),
    ("a draw that is no tuple", {"operations": f"{BAD}:NOT_A_TUPLE"}, "not a tuple of arguments"),
    ("a string for a list", {"operations": f"{BAD}:NOT_A_LIST"}, "is a str: expected a dict"),
    ("a list that is not there", {"operations": f"{BAD}:NOWHERE"}, "has no attribute 'NOWHERE'"),
    ("a model without a method", {"model": f"{BAD}:HalfModel"}, "HalfModel has no method stock"),
    ("a model that is no class", {"model": f"{BAD}:EMPTY"}, "not a class"),
    (
        "an async def factory",
        {"impl": "awaited_factory"},
        "the factory returned a coroutine, not the object (is it `async def`?)",
    ),
]


@pytest.mark.parametrize(("name", "options", "words"), CASES, ids=[c[0] for c in CASES])
def test_bad_input_is_refused_before_any_server(name, options, words, monkeypatch):
    """Each refusal is a ProtocolError (one line, exit 2), raised while loading: no server yet."""
    monkeypatch.setattr("contend.commands.check.open_target", _no_server)
    impl = options.pop("impl", "make")
    operations = options.pop("operations", f"{STOCK}:OPERATIONS")
    with pytest.raises(ProtocolError) as caught:
        loaded(f"{BAD}:{impl}", operations=operations, **options)
    assert words in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_module_without_a_list_says_what_to_add():
    with pytest.raises(ProtocolError, match=f"needs the operation list: an {OPERATIONS_ATTRIBUTE} dict"):
        loaded("tests.fixtures.foreign.lua_registry:make")


def test_operations_belong_to_the_operations_kind():
    with pytest.raises(ProtocolError, match="--operations goes with --kind operations"):
        parse_spec(f"{STOCK}:make", "registry", EVERY_KIND, operations=f"{STOCK}:OPERATIONS")


@pytest.mark.parametrize(
    "argv",
    [
        ["--operations", f"{BAD}:EMPTY"],
        ["--operations", f"{BAD}:CANNOT_DRAW"],
        ["--operations", f"{BAD}:MISSING"],
    ],
)
def test_the_command_refuses_with_one_line_and_exit_2_before_a_server_starts(argv, capsys, monkeypatch):
    monkeypatch.setattr("contend.commands.check.open_target", _no_server)
    code = main(["check", "--impl", f"{BAD}:make", "--kind", "operations", *argv])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def _no_server(*args, **kwargs):
    raise AssertionError("a server was started for bad input")


def test_a_factory_that_raises_is_said_plainly(contend_target, capsys, monkeypatch):
    from pathlib import Path

    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    argv = ["check", "--redis-url", contend_target.url, "--impl", f"{BAD}:raising", "--kind", "operations"]
    code = main([*argv, "--operations", f"{STOCK}:OPERATIONS"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "raised RuntimeError: boom in the factory (at bad_inputs.py:" in err, err
