"""The registry model: ids from 1, stable, gap-free; register_many."""

from contend.models import UNKNOWN, Op, RegistryModel


def run(ops):
    model = RegistryModel()
    state = model.init()
    outs = []
    for f, value in ops:
        out, state = model.apply(state, f, value)
        outs.append(out)
    return outs, state


def test_ids_start_at_one_and_are_stable():
    outs, state = run([("register", "a"), ("register", "b"), ("register", "a")])
    assert outs == [1, 2, 1]
    assert state == ("a", "b")


def test_lookup_reverse_count():
    outs, _ = run(
        [
            ("lookup", "a"),
            ("register", "a"),
            ("lookup", "a"),
            ("reverse", 1),
            ("reverse", 2),
            ("reverse", 0),
            ("count", None),
        ]
    )
    assert outs == [None, 1, 1, "a", None, None, 1]


def test_register_many_is_sequential_registration():
    outs, state = run([("register", "b"), ("register_many", ("a", "b", "c", "a"))])
    assert outs == [1, (2, 1, 3, 2)]
    assert state == ("b", "a", "c")


def test_step_accepts_the_right_output_only():
    model = RegistryModel()
    s0 = model.init()
    ok, s1 = model.step(s0, Op("register", "a", output=1))
    assert ok and s1 == ("a",)
    bad, _ = model.step(s1, Op("register", "b", output=3))
    assert not bad


def test_unknown_output_is_legal_and_takes_effect():
    model = RegistryModel()
    ok, s1 = model.step(model.init(), Op("register", "a", output=UNKNOWN))
    assert ok and s1 == ("a",)


def test_unknown_operation_is_rejected():
    model = RegistryModel()
    try:
        model.apply(model.init(), "delete", "a")
    except ValueError as exc:
        assert "delete" in str(exc)
    else:
        raise AssertionError("expected ValueError")


def test_describe_state_is_short():
    model = RegistryModel()
    state = tuple(f"n{i}" for i in range(20))
    text = model.describe_state(state)
    assert "20 names" in text and len(text) < 200
