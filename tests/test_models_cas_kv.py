"""The cas-register, kv and per-name registry models, and their Jepsen adapters."""

from __future__ import annotations

import pytest
from contend.models import CasRegisterModel, KvModel, RegistryByNameModel
from contend.models.base import UNKNOWN, Op


def same_step(a, b):
    """Steps agree: the same legality, and the same next state when legal."""
    return a[0] == b[0] and (not a[0] or a[1] == b[1])


def run_steps(model, state, *ops):
    legal = []
    for op in ops:
        ok, state = model.step(state, op)
        legal.append(ok)
    return legal, state


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


def test_registry_by_name_semantics():
    m = RegistryByNameModel()
    legal, state = run_steps(
        m,
        m.init(),
        Op("lookup", "a", None),
        Op("register", "a", 1),
        Op("register", "a", 1),
        Op("lookup", "a", 1),
        Op("reverse", 1, "a"),
        Op("register", "a", 2),
        Op("lookup", "a", None),
        Op("register", "b", 1),
        Op("register", "c", 0),
    )
    assert legal == [True, True, True, True, True, False, False, False, False]
    # A lost register: the name may hold an id nobody saw yet; the first one seen sticks.
    legal, state = run_steps(
        m, (), Op("register", "a", UNKNOWN), Op("lookup", "a", 5), Op("register", "a", 5)
    )
    assert legal == [True, True, True] and state == (("a", 5),)
    assert m.step((("a", UNKNOWN),), Op("lookup", "a", None))[0] is False
    assert m.describe_state((("a", UNKNOWN),)) == "{'a'→?}"


@pytest.mark.parametrize(
    "op",
    [
        Op("register", "a", 1),
        Op("register", "a", 2),
        Op("register", "a", UNKNOWN),
        Op("lookup", "a", None),
        Op("lookup", "a", 1),
        Op("reverse", 1, "a"),
    ],
)
@pytest.mark.parametrize("state", [(), (("a", 1),), (("a", UNKNOWN),), (("b", 1),)])
def test_registry_by_name_compiled_step_agrees(op, state):
    m = RegistryByNameModel()
    assert same_step(m.compile_step(op)(state), m.step(state, op))


def test_registry_by_name_partitions_by_name():
    m = RegistryByNameModel()
    ops = [m.adapt(o) for o in (Op("register", "a", 1), Op("reverse", 1, "a"), Op("count", None, 1))]
    ops.append(m.adapt(Op("reverse", 9, None)))
    ops.append(m.adapt(Op("lookup", "b", None)))
    assert [[o.f for o in p] for p in m.partition(ops)] == [["register", "reverse"], ["lookup"]]
    with pytest.raises(ValueError, match="register_many spans names"):
        m.adapt(Op("register_many", ["a", "b"], [1, 2]))
