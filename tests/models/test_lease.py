"""The lease model: acquire, release, extend, expiry, fencing tokens."""

import pytest

from contend.models import UNKNOWN, LeaseModel, LeaseState, Op
from contend.models.lease import NOT_OWNER, OK, holder, token


def outputs(model, calls, state=None):
    """apply each (f, process) in turn; the outputs and the final state."""
    state = model.init() if state is None else state
    outs = []
    for f, process in calls:
        out, state = model.apply(state, f, None, process)
        outs.append(out)
    return outs, state


def replay(model, ops):
    """step through ops; the first illegal op's index (None when all legal) and the final state."""
    state = model.init()
    for i, op in enumerate(ops):
        legal, state = model.step(state, op)
        if not legal:
            return i, state
    return None, state


def test_one_holder_at_a_time():
    outs, state = outputs(
        LeaseModel(),
        [("acquire", "a"), ("acquire", "b"), ("release", "b"), ("release", "a"), ("acquire", "b")],
    )
    assert outs == [True, False, NOT_OWNER, OK, True]
    assert holder(state) == "b"


def test_not_reentrant():
    outs, state = outputs(LeaseModel(), [("acquire", "a"), ("acquire", "a")])
    assert outs == [True, False]
    assert state == LeaseState("a", 1)


def test_release_and_extend_without_lease():
    outs, state = outputs(
        LeaseModel(), [("release", "a"), ("extend", "a"), ("acquire", "a"), ("extend", "a")]
    )
    assert outs == [NOT_OWNER, NOT_OWNER, True, True]
    assert holder(state) == "a"


def test_expired_holder_cannot_release_anothers_lease():
    model = LeaseModel()
    outs, state = outputs(
        model,
        [
            ("acquire", "a"),
            ("expire", None),
            ("release", "a"),
            ("acquire", "b"),
            ("release", "a"),
            ("extend", "a"),
            ("acquire", "c"),
            ("extend", "b"),
        ],
    )
    assert outs == [True, None, NOT_OWNER, True, NOT_OWNER, NOT_OWNER, False, True]
    assert state == LeaseState("b", 2)


def test_expire_when_free_changes_nothing():
    model = LeaseModel()
    out, state = model.apply(model.init(), "expire", None)
    assert out is None and state == LeaseState(None, 0)


def test_expiry_is_an_event_not_a_clock():
    # Without an expire event the lease lasts: a second client keeps failing.
    ok_index, _ = replay(
        LeaseModel(),
        [Op("acquire", output=True, process="a")] + [Op("acquire", output=False, process="b")] * 5,
    )
    assert ok_index is None
    bad_index, _ = replay(
        LeaseModel(), [Op("acquire", output=True, process="a"), Op("acquire", output=True, process="b")]
    )
    assert bad_index == 1


def test_fencing_counter_counts_grants_only():
    outs, state = outputs(
        LeaseModel(fenced=True),
        [
            ("acquire", "a"),
            ("acquire", "b"),
            ("release", "a"),
            ("acquire", "b"),
            ("expire", None),
            ("acquire", "c"),
        ],
    )
    assert outs == [0, False, OK, 1, None, 2]  # the smallest legal tokens: 0 may come first
    assert token(state) == 2
    assert token(LeaseState(None, 3)) is None


def test_fenced_tokens_must_strictly_increase():
    model = LeaseModel(fenced=True)
    s0 = model.init()
    legal, s1 = model.step(s0, Op("acquire", output=7, process="a"))
    assert legal and s1 == LeaseState("a", 7)  # gaps are fine: failed attempts may INCR too
    legal, s2 = model.step(s1, Op("expire"))
    assert legal and s2 == LeaseState(None, 7)
    assert not model.step(s2, Op("acquire", output=7, process="b"))[0]
    assert not model.step(s2, Op("acquire", output=3, process="b"))[0]
    assert not model.step(s2, Op("acquire", output=True, process="b"))[0]
    legal, s3 = model.step(s2, Op("acquire", output=8, process="b"))
    assert legal and token(s3) == 8
    assert not model.step(s3, Op("acquire", output=9, process="c"))[0]  # held: only False is legal
    assert model.step(s3, Op("acquire", output=False, process="c")) == (True, s3)


def test_unfenced_success_is_true_not_one():
    model = LeaseModel()
    assert not model.step(model.init(), Op("acquire", output=1, process="a"))[0]
    assert model.step(model.init(), Op("acquire", output=True, process="a"))[0]
    held = LeaseState("a", 1)
    assert not model.step(held, Op("acquire", output=0, process="b"))[0]


def test_unknown_output_is_legal_and_takes_effect():
    model = LeaseModel(fenced=True)
    legal, s1 = model.step(model.init(), Op("acquire", output=UNKNOWN, process="a"))
    assert legal and s1 == LeaseState("a", 0)  # the smallest token it may have received
    legal, s2 = model.step(s1, Op("acquire", output=UNKNOWN, process="b"))
    assert legal and s2 == s1  # held: the unknown acquire cannot have succeeded
    legal, s3 = model.step(s2, Op("release", output=UNKNOWN, process="a"))
    assert legal and s3 == LeaseState(None, 0)
    # The next token only has to exceed the one the unknown acquire may have received.
    assert not model.step(s3, Op("acquire", output=0, process="c"))[0]
    assert model.step(s3, Op("acquire", output=1, process="c"))[0]


def test_spontaneous_expiry_explains_a_takeover_but_not_a_foreign_release():
    strict, lenient = LeaseModel(), LeaseModel(spontaneous_expiry=True)
    takeover = [Op("acquire", output=True, process="a"), Op("acquire", output=True, process="b")]
    assert replay(strict, takeover)[0] == 1
    index, state = replay(lenient, takeover)
    assert index is None and state == LeaseState("b", 2)
    # a's lease is gone; its release must not report success (it would delete b's key).
    index, _ = replay(lenient, [*takeover, Op("release", output=OK, process="a")])
    assert index == 2
    index, state = replay(lenient, [*takeover, Op("release", output=NOT_OWNER, process="a")])
    assert index is None and holder(state) == "b"


def test_spontaneous_expiry_is_assumed_only_when_needed():
    model = LeaseModel(spontaneous_expiry=True)
    held = LeaseState("a", 1)
    # A foreign release is explained without expiring a: a still holds afterwards.
    assert model.step(held, Op("release", output=NOT_OWNER, process="b")) == (True, held)
    # The holder learning its lease is gone ends it.
    assert model.step(held, Op("extend", output=NOT_OWNER, process="a")) == (True, LeaseState(None, 1))
    assert model.step(held, Op("release", output=OK, process="a")) == (True, LeaseState(None, 1))
    # Nothing explains a wrong answer on a free lock.
    assert not model.step(LeaseState(None, 1), Op("release", output=OK, process="a"))[0]


def test_partition_by_key():
    ops = [
        Op("acquire", output=True, key="x", process="a"),
        Op("acquire", output=True, key="y", process="b"),
        Op("release", output=OK, key="x", process="a"),
    ]
    parts = LeaseModel().partition(ops)
    assert parts == [[ops[0], ops[2]], [ops[1]]]
    assert all(replay(LeaseModel(), part)[0] is None for part in parts)


def test_states_are_hashable_and_comparable():
    model = LeaseModel(fenced=True)
    _, a = outputs(model, [("acquire", "a"), ("release", "a")])
    _, b = outputs(model, [("acquire", "b"), ("release", "b")])
    assert a == b and hash(a) == hash(b)
    assert len({model.init(), a, b, LeaseState("a", 1)}) == 3


def test_describe_state():
    model = LeaseModel()
    assert model.describe_state(LeaseState("a", 4)) == "held by 'a' (token 4)"
    assert model.describe_state(LeaseState(None, 4)) == "free (last token 4)"
    assert model.name == "lease" and LeaseModel(fenced=True).name == "fenced-lease"


def test_bad_operations_are_rejected():
    model = LeaseModel()
    with pytest.raises(ValueError, match="unlock"):
        model.apply(model.init(), "unlock", None, "a")
    with pytest.raises(ValueError, match=r"Op\.process"):
        model.step(model.init(), Op("acquire", output=True))


def test_spontaneous_expiry_with_fencing_still_needs_a_larger_token():
    model = LeaseModel(fenced=True, spontaneous_expiry=True)
    held = LeaseState("a", 4)
    assert model.step(held, Op("acquire", output=5, process="b")) == (True, LeaseState("b", 5))
    assert not model.step(held, Op("acquire", output=4, process="b"))[0]
    assert model.step(held, Op("acquire", output=False, process="b")) == (True, held)


def test_a_first_fencing_token_of_zero_is_legal_and_must_then_increase():
    model = LeaseModel(fenced=True)
    legal, s1 = model.step(model.init(), Op("acquire", None, 0, "L", "a"))
    assert legal and token(s1) == 0
    legal, s2 = model.step(s1, Op("release", None, OK, "L", "a"))
    assert legal
    legal, _ = model.step(s2, Op("acquire", None, 0, "L", "b"))
    assert not legal  # 0 again: not increasing
    assert model.describe_state(model.init()) == "free (no token yet)"


def test_may_refuse_lets_an_acquire_lose_to_contention_but_not_win_a_held_lock():
    strict, lenient = LeaseModel(), LeaseModel(may_refuse=True)
    refused = [Op("acquire", output=False, process="a"), Op("acquire", output=True, process="b")]
    assert replay(strict, refused)[0] == 0  # False while free: only a try-lock that may lose
    index, state = replay(lenient, refused)
    assert index is None and holder(state) == "b"
    twice = [Op("acquire", output=True, process="a"), Op("acquire", output=True, process="b")]
    assert replay(lenient, twice)[0] == 1
