"""The counting semaphore model, fair and unfair."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from contend.models import UNKNOWN, Op, SemaphoreModel, SemaphoreState
from contend.models.semaphore import NOT_OWNER, OK, holders, waiting


def outputs(model, calls, state=None):
    """apply each (f, process) in turn ("expire" takes the process as its value)."""
    state = model.init() if state is None else state
    outs = []
    for f, process in calls:
        if f == "expire":
            out, state = model.apply(state, f, process)
        else:
            out, state = model.apply(state, f, None, process)
        outs.append(out)
    return outs, state


def test_at_most_limit_holders():
    outs, state = outputs(
        SemaphoreModel(2),
        [("acquire", "a"), ("acquire", "b"), ("acquire", "c"), ("release", "a"), ("acquire", "c")],
    )
    assert outs == [True, True, False, OK, True]
    assert holders(state) == {"b", "c"}


def test_a_process_holds_one_permit():
    outs, state = outputs(SemaphoreModel(3), [("acquire", "a"), ("acquire", "a")])
    assert outs == [True, False]
    assert holders(state) == {"a"}


def test_release_without_permit():
    outs, state = outputs(SemaphoreModel(1), [("release", "a"), ("acquire", "a"), ("release", "b")])
    assert outs == [NOT_OWNER, True, NOT_OWNER]
    assert holders(state) == {"a"}


def test_expire_frees_the_permit_and_the_holder_is_not_told():
    outs, state = outputs(
        SemaphoreModel(1),
        [("acquire", "a"), ("expire", "a"), ("acquire", "b"), ("release", "a"), ("expire", "z")],
    )
    assert outs == [True, None, True, NOT_OWNER, None]
    assert holders(state) == {"b"}


def test_step_rejects_a_holder_over_the_limit():
    model = SemaphoreModel(1)
    legal, s1 = model.step(model.init(), Op("acquire", output=True, process="a"))
    assert legal
    assert not model.step(s1, Op("acquire", output=True, process="b"))[0]
    assert model.step(s1, Op("acquire", output=False, process="b")) == (True, s1)
    assert not model.step(s1, Op("release", output=OK, process="b"))[0]
    assert not model.step(model.init(), Op("acquire", output=1, process="a"))[0]


def test_unknown_output_is_legal_and_takes_effect():
    model = SemaphoreModel(1)
    legal, s1 = model.step(model.init(), Op("acquire", output=UNKNOWN, process="a"))
    assert legal and holders(s1) == {"a"}
    legal, s2 = model.step(s1, Op("acquire", output=UNKNOWN, process="b"))
    assert legal and s2 == s1


def test_unfair_has_no_line():
    model = SemaphoreModel(2)
    with pytest.raises(ValueError, match="fair=True"):
        model.apply(model.init(), "request", None, "a")


def test_fair_grants_in_ticket_order_when_one_permit_is_free():
    model = SemaphoreModel(2, fair=True)
    outs, state = outputs(
        model,
        [("acquire", "x"), ("request", "a"), ("request", "b"), ("acquire", "b"), ("acquire", "a")],
    )
    # One permit free: b (second in line) is refused and gives its ticket up; a gets it.
    assert outs == [True, OK, OK, False, True]
    assert holders(state) == {"x", "a"} and waiting(state) == ()


def test_fair_later_ticket_may_go_first_when_all_ahead_still_fit():
    outs, state = outputs(
        SemaphoreModel(2, fair=True), [("request", "a"), ("request", "b"), ("acquire", "b"), ("acquire", "a")]
    )
    assert outs == [OK, OK, True, True]
    assert holders(state) == {"a", "b"}


def test_fair_newcomer_cannot_overtake_the_line():
    model = SemaphoreModel(1, fair=True)
    outs, state = outputs(model, [("request", "a"), ("acquire", "c"), ("acquire", "a")])
    assert outs == [OK, False, True]
    assert holders(state) == {"a"} and waiting(state) == ()
    # The unfair semaphore would have let c in.
    assert outputs(SemaphoreModel(1), [("acquire", "c"), ("acquire", "a")])[0] == [True, False]


def test_fair_step_catches_the_redis_in_action_race():
    # Tickets a then b; b checks its rank first and takes the only permit: unfair.
    model = SemaphoreModel(1, fair=True)
    state = model.init()
    for op in (Op("request", output=OK, process="a"), Op("request", output=OK, process="b")):
        legal, state = model.step(state, op)
        assert legal
    assert not model.step(state, Op("acquire", output=True, process="b"))[0]
    legal, state = model.step(state, Op("acquire", output=True, process="a"))
    assert legal and holders(state) == {"a"} and waiting(state) == ("b",)


def test_fair_request_is_idempotent_and_release_or_expire_leaves_the_line():
    model = SemaphoreModel(1, fair=True)
    outs, state = outputs(model, [("request", "a"), ("request", "b"), ("request", "a")])
    assert outs == [OK, OK, OK] and waiting(state) == ("a", "b")
    outs, after_release = outputs(model, [("release", "a")], state)
    assert outs == [NOT_OWNER] and waiting(after_release) == ("b",)
    _, after_expire = outputs(model, [("expire", "a")], state)
    assert waiting(after_expire) == ("b",)
    assert outputs(model, [("acquire", "b")], after_expire)[0] == [True]


def test_fair_holder_request_changes_nothing():
    model = SemaphoreModel(2, fair=True)
    outs, state = outputs(model, [("acquire", "a"), ("request", "a"), ("acquire", "a")])
    assert outs == [True, OK, False]
    assert state == SemaphoreState(frozenset({"a"}), ())


OPERATIONS = st.lists(
    st.tuples(st.sampled_from(["request", "acquire", "release", "expire"]), st.sampled_from("abcde")),
    max_size=40,
)


@given(OPERATIONS, st.integers(1, 3), st.booleans())
def test_never_more_than_limit_holders(calls, limit, fair):
    model = SemaphoreModel(limit, fair=fair)
    state = model.init()
    for f, process in calls:
        if f == "request" and not fair:
            continue
        before = state
        out, state = model.apply(
            state, f, process if f == "expire" else None, None if f == "expire" else process
        )
        assert len(holders(state)) <= limit
        assert set(waiting(state)).isdisjoint(holders(state))
        assert model.step(
            before, Op(f, process if f == "expire" else None, out, None, None if f == "expire" else process)
        ) == (True, state)
        if f == "acquire":
            assert out is (process in holders(state) and process not in holders(before))


def test_partition_by_key():
    ops = [
        Op("acquire", output=True, key="x", process="a"),
        Op("acquire", output=True, key="y", process="b"),
        Op("release", output=OK, key="x", process="a"),
    ]
    assert SemaphoreModel(1).partition(ops) == [[ops[0], ops[2]], [ops[1]]]


def test_states_are_hashable_and_comparable():
    model = SemaphoreModel(2, fair=True)
    _, ab = outputs(model, [("acquire", "a"), ("acquire", "b")])
    _, ba = outputs(model, [("acquire", "b"), ("acquire", "a")])
    assert ab == ba and hash(ab) == hash(ba)
    _, line_ab = outputs(model, [("request", "a"), ("request", "b")])
    _, line_ba = outputs(model, [("request", "b"), ("request", "a")])
    assert line_ab != line_ba  # ticket order matters
    assert len({model.init(), ab, ba, line_ab, line_ba}) == 4


def test_describe_state_and_limits():
    model = SemaphoreModel(3, fair=True)
    _, state = outputs(model, [("acquire", "b"), ("acquire", "a"), ("request", "c")])
    assert model.describe_state(state) == "2/3 held by 'a', 'b'; line: 'c'"
    assert SemaphoreModel(1).describe_state(SemaphoreState()) == "0/1 held by nobody"
    assert model.name == "fair-semaphore" and SemaphoreModel(1).name == "semaphore"
    for bad in (0, -1, True, 1.5):
        with pytest.raises(ValueError, match="limit"):
            SemaphoreModel(bad)


def test_bad_operations_are_rejected():
    model = SemaphoreModel(1)
    with pytest.raises(ValueError, match="signal"):
        model.apply(model.init(), "signal", None, "a")
    with pytest.raises(ValueError, match=r"Op\.process"):
        model.step(model.init(), Op("acquire", output=True))
