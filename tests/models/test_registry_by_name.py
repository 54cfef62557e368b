"""The per-name registry model."""

from __future__ import annotations

import pytest

from contend.models import RegistryByNameModel
from contend.models.base import UNKNOWN, Op
from tests.models.helpers import run_steps, same_step


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
