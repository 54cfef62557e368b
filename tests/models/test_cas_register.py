"""The cas-register model and its Jepsen adapter."""

from __future__ import annotations

import pytest

from contend.models import CasRegisterModel
from contend.models.base import UNKNOWN, Op
from tests.models.helpers import run_steps, same_step


def test_cas_register_semantics():
    m = CasRegisterModel()
    legal, state = run_steps(
        m,
        m.init(),
        Op("read", None, None),
        Op("write", 3, None),
        Op("cas", (3, 4), True),
        Op("cas", (3, 5), False),
        Op("read", None, 4),
        Op("read", None, 3),
    )
    assert legal == [True, True, True, True, True, False]
    assert state == 4
    assert m.step(4, Op("cas", (4, 9), False))[0] is False
    assert m.step(4, Op("cas", (4, 9), UNKNOWN)) == (True, 9)
    assert m.describe_state(None) == "nil"


@pytest.mark.parametrize(
    "op",
    [
        Op("read", None, 2),
        Op("read", None, UNKNOWN),
        Op("write", 7, None),
        Op("cas", (2, 5), True),
        Op("cas", (2, 5), False),
        Op("cas", (1, 5), False),
        Op("cas", (1, 5), UNKNOWN),
    ],
)
@pytest.mark.parametrize("state", [None, 1, 2])
def test_cas_register_compiled_step_agrees(op, state):
    m = CasRegisterModel()
    assert same_step(m.compile_step(op)(state), m.step(state, op))


def test_cas_register_adapts_jepsen_encodings():
    m = CasRegisterModel()
    assert m.adapt(Op("write", 3, 3, None, 1)) == Op("write", 3, None, None, 1)
    assert m.adapt(Op("cas", [3, 0], [3, 0])) == Op("cas", (3, 0), True)
    assert m.adapt(Op("cas", [3, 0], False)) == Op("cas", (3, 0), False)
    assert m.adapt(Op("read", None, [1, 2])) == Op("read", None, (1, 2))
    # Jepsen's independent keys: [k v] tuples.
    assert m.adapt(Op("write", [7, 3], [7, 3])) == Op("write", 3, None, 7)
    assert m.adapt(Op("read", [7, None], [7, 3])) == Op("read", None, 3, 7)
    assert m.adapt(Op("cas", [7, [3, 4]], UNKNOWN)) == Op("cas", (3, 4), UNKNOWN, 7)
    with pytest.raises(ValueError, match="cas expects"):
        m.adapt(Op("cas", 3, True))
    with pytest.raises(ValueError, match="no operation 'incr'"):
        m.adapt(Op("incr", 1, 2))


def test_cas_register_partitions_by_key():
    m = CasRegisterModel()
    parts = m.partition([Op("read", None, 1, "a"), Op("read", None, 1, "b"), Op("write", 1, None, "a")])
    assert [[o.key for o in p] for p in parts] == [["a", "a"], ["b"]]
