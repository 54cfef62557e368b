"""Pure sequential specifications of Redis concurrency primitives. No Redis here.

A model is a tiny value in the style of Porcupine's `model.go`: an initial state,
a `step` that says whether an operation with a given input could have returned a
given output from a state (and what the state becomes), and an optional
partition so independent keys are checked on their own.
"""

from models.base import UNKNOWN, DeterministicModel, Model, Op
from models.registry import RegistryModel, RegistryState

__all__ = ["UNKNOWN", "DeterministicModel", "Model", "Op", "RegistryModel", "RegistryState"]
