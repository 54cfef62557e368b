"""Pure sequential specifications of Redis concurrency primitives. No Redis here.

A model is a tiny value in the style of Porcupine's `model.go`: an initial state,
a `step` that says whether an operation with a given input could have returned a
given output from a state (and what the state becomes), and an optional
partition so independent keys are checked on their own.
"""

from contend.models.base import UNKNOWN, DeterministicModel, Model, Op
from contend.models.cas_register import CasRegisterModel
from contend.models.kv import KvModel
from contend.models.lease import LeaseModel, LeaseState
from contend.models.queue import QueueModel, QueueState
from contend.models.rate_limiter import RateLimiterModel, RateLimiterState
from contend.models.registry import RegistryModel, RegistryState
from contend.models.registry_by_name import RegistryByNameModel
from contend.models.semaphore import SemaphoreModel, SemaphoreState
from contend.models.single_flight import FlightState, SingleFlightModel

__all__ = [
    "UNKNOWN",
    "CasRegisterModel",
    "DeterministicModel",
    "FlightState",
    "KvModel",
    "LeaseModel",
    "LeaseState",
    "Model",
    "Op",
    "QueueModel",
    "QueueState",
    "RateLimiterModel",
    "RateLimiterState",
    "RegistryByNameModel",
    "RegistryModel",
    "RegistryState",
    "SemaphoreModel",
    "SemaphoreState",
    "SingleFlightModel",
]
