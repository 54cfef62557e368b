"""The single-flight model: leaders, waiters, failures and timeouts."""

import pytest

from contend.models import UNKNOWN, FlightState, Op, SingleFlightModel
from contend.models.single_flight import (
    DUPLICATE,
    FAILED,
    LEADER_FAILED,
    NO_RESULT,
    OK,
    TIMEOUT,
    computations,
    in_flight,
)


def compute(process, value):
    return Op("compute", value, OK, process=process)


def call(process, output):
    return Op("call", None, output, process=process)


def replay(ops, state=None):
    """step through ops; the first illegal op's index (None when all legal) and the final state."""
    model = SingleFlightModel()
    state = model.init() if state is None else state
    for i, op in enumerate(ops):
        legal, state = model.step(state, op)
        if not legal:
            return i, state
    return None, state


def test_one_leader_computes_and_waiters_share_its_value():
    model = SingleFlightModel()
    s = model.init()
    out, s = model.apply(s, "compute", 3, "a")
    assert out == OK and in_flight(s) and computations(s) == 1
    out, s = model.apply(s, "call", None, "b")
    assert out == (3, "waiter")
    out, s = model.apply(s, "call", None, "a")
    assert out == (3, "leader") and not in_flight(s)
    # A waiter that completes after its leader returned still gets the value.
    out, s = model.apply(s, "call", None, "c")
    assert out == (3, "waiter")
    assert s == FlightState(1, 3, None, frozenset())


def test_second_computation_in_one_epoch_is_illegal():
    index, state = replay([compute("a", 3), compute("b", 3)])
    assert index == 1 and computations(state) == 1
    model = SingleFlightModel()
    assert model.apply(FlightState(1, 3, "a", frozenset({("a", 3)})), "compute", 3, "b")[0] == DUPLICATE


def test_a_new_epoch_starts_after_the_leader_returns():
    index, state = replay(
        [
            compute("a", ("a", 1)),
            call("a", (("a", 1), "leader")),
            compute("b", ("b", 1)),
            call("c", (("b", 1), "waiter")),
        ]
    )
    assert index is None and computations(state) == 2 and state.leader == "b"


def test_expire_ends_the_flight_but_its_leader_still_returns_its_value():
    ops = [
        compute("a", "v1"),
        Op("expire"),
        compute("b", "v2"),
        call("a", ("v1", "leader")),
        call("c", ("v2", "waiter")),
        call("b", ("v2", "leader")),
    ]
    index, state = replay(ops)
    assert index is None and computations(state) == 2 and not in_flight(state)
    # After the new computation, the stale value is wrong for a waiter.
    assert replay([*ops[:3], call("c", ("v1", "waiter"))])[0] == 3


def test_waiter_must_get_the_leaders_value():
    assert replay([compute("a", 3), call("b", (4, "waiter"))])[0] == 1
    assert replay([compute("a", 3), call("b", (3, "leader"))])[0] == 1
    assert replay([compute("a", 3), call("a", (3, "waiter"))])[0] == 1
    assert replay([compute("a", 3), call("a", (4, "leader"))])[0] == 1
    # Nobody computed: no value can be returned.
    assert replay([call("b", (None, "waiter"))])[0] == 0
    assert replay([call("b", (None, "leader"))])[0] == 0


def test_timeout_is_always_legal():
    index, state = replay([call("b", TIMEOUT), compute("a", 3), call("b", TIMEOUT), call("a", (3, "leader"))])
    assert index is None and computations(state) == 1
    assert SingleFlightModel().apply(FlightState(), "call", None, "b")[0] == TIMEOUT


def test_failed_computation_is_reported_as_leader_failed():
    ops = [compute("a", FAILED), call("b", LEADER_FAILED), call("a", LEADER_FAILED)]
    index, state = replay(ops)
    assert index is None and state.result is FAILED and not in_flight(state)
    assert replay([compute("a", FAILED), call("b", (None, "waiter"))])[0] == 1
    assert replay([compute("a", 3), call("b", LEADER_FAILED)])[0] == 1
    # A failed epoch ends like any other: the next call may compute again.
    assert replay([*ops, compute("c", 5), call("c", (5, "leader"))])[0] is None


def test_unknown_output_is_legal_and_takes_effect():
    index, state = replay([compute("a", 3), call("a", UNKNOWN)])
    assert index is None and not in_flight(state) and state.unreturned == frozenset()
    assert replay([compute("a", 3), call("a", UNKNOWN), compute("b", 4)])[0] is None


def test_json_lists_read_as_tuples():
    index, state = replay(
        [compute("a", [1, [2]]), call("b", [[1, [2]], "waiter"]), call("a", [[1, [2]], "leader"])]
    )
    assert index is None and state.result == (1, (2,))
    hash(state)


def test_partition_by_key():
    ops = [
        Op("compute", 1, OK, key="x", process="a"),
        Op("compute", 2, OK, key="y", process="b"),
        Op("call", None, (1, "leader"), key="x", process="a"),
    ]
    parts = SingleFlightModel().partition(ops)
    assert parts == [[ops[0], ops[2]], [ops[1]]]
    assert all(replay(part)[0] is None for part in parts)
    # Together, the second compute would look like a duplicate.
    assert replay(ops)[0] == 1


def test_states_are_hashable():
    _, s1 = replay([compute("a", 3), call("b", (3, "waiter"))])
    _, s2 = replay([compute("a", 3), call("c", (3, "waiter"))])
    assert s1 == s2 and hash(s1) == hash(s2)
    assert len({SingleFlightModel().init(), s1, FlightState(1, 3, None, frozenset())}) == 3
    assert FlightState().result is NO_RESULT


def test_describe_state():
    model = SingleFlightModel()
    assert model.describe_state(model.init()) == "no computation yet"
    _, state = replay([compute("a", 3)])
    assert model.describe_state(state) == "epoch 1 in flight, leader 'a', result 3; leaders not returned: 'a'"
    _, state = replay([compute("a", 3), call("a", (3, "leader"))])
    assert model.describe_state(state) == "epoch 1 ended, result 3"


def test_bad_operations_are_rejected():
    model = SingleFlightModel()
    with pytest.raises(ValueError, match="forget"):
        model.apply(model.init(), "forget", None, "a")
    with pytest.raises(ValueError, match=r"Op\.process"):
        model.step(model.init(), Op("call", output=TIMEOUT))
