"""The WGL search on its own: against brute force, and its bounded dominance pruning."""

from __future__ import annotations

import itertools
import random

import pytest

from contend.history.search import DOMINANCE_CHECKS, _undominated, search
from contend.history.verdict import Linearizability
from contend.models.base import UNKNOWN, Op
from contend.models.cas_register import CasRegisterModel


def brute_force(model, items):
    """Linearizable? By trying every order of every subset of the info operations."""
    definite = [k for k, (_, _, end) in enumerate(items) if end is not None]
    info = [k for k, (_, _, end) in enumerate(items) if end is None]
    for r in range(len(info) + 1):
        for chosen in itertools.combinations(info, r):
            for order in itertools.permutations(definite + list(chosen)):
                if not all(
                    items[b][2] is None or items[b][2] >= items[a][1]
                    for x, a in enumerate(order)
                    for b in order[x + 1 :]
                ):
                    continue
                state = model.init()
                for k in order:
                    legal, state = model.step(state, items[k][0])
                    if not legal:
                        break
                else:
                    return True
    return False


@pytest.mark.parametrize("seed", range(4))
def test_search_agrees_with_brute_force(seed):
    rng = random.Random(seed)
    model = CasRegisterModel(initial=0)
    disagreements = []
    outcomes = set()
    for _ in range(150):
        items = []
        for _ in range(rng.randint(1, 6)):
            start = rng.randrange(20)
            end = None if rng.random() < 0.2 else start + rng.randrange(8)
            kind = rng.random()
            if kind < 0.4:
                op = Op("read", None, rng.randrange(3) if end is not None else UNKNOWN)
            elif kind < 0.75:
                op = Op("write", rng.randrange(3), None if end is not None else UNKNOWN)
            else:
                op = Op(
                    "cas",
                    (rng.randrange(3), rng.randrange(3)),
                    rng.random() < 0.6 if end is not None else UNKNOWN,
                )
            items.append((op, start, end))
        expected = brute_force(model, items)
        got = search(
            [model.compile_step(op) for op, _, _ in items],
            [s for _, s, _ in items],
            [e for _, _, e in items],
            model.init(),
        ).outcome
        outcomes.add(got)
        if (got is Linearizability.LINEARIZABLE) != expected:
            disagreements.append(items)
    assert not disagreements, disagreements[:2]
    assert outcomes == {Linearizability.LINEARIZABLE, Linearizability.NOT_LINEARIZABLE}


def test_dominance_pruning_remembers_a_bounded_number_of_sets():
    """An unbounded list made single search steps slow enough to overrun the time budget."""
    seen: list[int] = []
    for k in range(DOMINANCE_CHECKS * 3):
        assert _undominated(seen, 1 << (k + 1))  # disjoint sets: none dominates another
    assert len(seen) == DOMINANCE_CHECKS
    assert not _undominated(seen, seen[-1] | 1)  # a superset of a remembered set is pruned


def test_the_result_names_the_prefix_and_the_culprit():
    model = CasRegisterModel(initial=0)
    # write 1 [0, 10], then read 0 [20, 30]: the read fits after no prefix.
    steps = [model.compile_step(Op("write", 1, None)), model.compile_step(Op("read", None, 0))]
    found = search(steps, [0, 20], [10, 30], model.init())
    assert found.outcome is Linearizability.NOT_LINEARIZABLE
    assert found.order == [0] and found.states == [1] and found.culprit == 1
    # ... and read 1 does fit: the whole linearization, no states kept.
    steps[1] = model.compile_step(Op("read", None, 1))
    found = search(steps, [0, 20], [10, 30], model.init())
    assert (found.outcome, found.order, found.states, found.culprit) == (
        Linearizability.LINEARIZABLE,
        [0, 1],
        [],
        None,
    )
