"""The kv model and its Jepsen adapter."""

from __future__ import annotations

import pytest

from contend.models import KvModel
from contend.models.base import UNKNOWN, Op
from tests.models.helpers import run_steps, same_step


def test_kv_semantics():
    m = KvModel()
    legal, state = run_steps(
        m,
        m.init(),
        Op("get", None, None, "x"),
        Op("get", None, "", "x"),
        Op("put", "a", None, "x"),
        Op("append", "b", None, "x"),
        Op("append", 1, None, "y"),
        Op("append", 2, None, "y"),
        Op("get", None, "ab", "x"),
        Op("get", None, (1, 2), "y"),
        Op("get", None, "a", "x"),
    )
    assert legal == [True, True, True, True, True, True, True, True, False]
    assert state == (("x", "ab"), ("y", (1, 2)))
    assert m.describe_state(state) == "{'x': 'ab', 'y': (1, 2)}"


@pytest.mark.parametrize(
    "op",
    [
        Op("get", None, "", "x"),
        Op("get", None, None, "x"),
        Op("get", None, "a", "x"),
        Op("get", None, UNKNOWN, "x"),
        Op("put", "z", None, "x"),
        Op("append", "z", None, "x"),
    ],
)
@pytest.mark.parametrize("state", [(), (("x", "a"),), (("y", "q"), ("x", ""))])
def test_kv_compiled_step_agrees(op, state):
    m = KvModel()
    assert same_step(m.compile_step(op)(state), m.step(state, op))


def test_kv_adapts_jepsen_encodings():
    m = KvModel()
    assert m.adapt(Op("append", "x 0 0 y", "x 0 0 y", "0")) == Op("append", "x 0 0 y", None, "0")
    assert m.adapt(Op("read", [5, None], [5, [1, 2]])) == Op("get", None, (1, 2), 5)
    assert m.adapt(Op("write", [5, 3], UNKNOWN)) == Op("put", 3, UNKNOWN, 5)
    with pytest.raises(ValueError, match="no operation 'cas'"):
        m.adapt(Op("cas", [1, 2], True, "k"))
