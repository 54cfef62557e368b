"""What the model tests share: stepping a model, and comparing a compiled step with the plain one."""

from __future__ import annotations


def same_step(a, b):
    """Steps agree: the same legality, and the same next state when legal."""
    return a[0] == b[0] and (not a[0] or a[1] == b[1])


def run_steps(model, state, *ops):
    legal = []
    for op in ops:
        ok, state = model.step(state, op)
        legal.append(ok)
    return legal, state
