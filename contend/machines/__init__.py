"""Hypothesis state machines over the controlled scheduler: one per family.

Each machine drives a few clients of one implementation through operations
whose round trips interleave as Hypothesis chooses, and checks the family's
properties after every step. They are plain RuleBasedStateMachine classes, so
`stateful_tests/` runs them under pytest and `contend check` runs them too.
`contend.machines.family.family_machine` picks the machine for an implementation.

To check your own implementation with one, subclass the family's machine and
point it at your factory (the protocols of docs/protocol.md, "Your own
code: the protocol"); `claims` says which properties are judged besides mutual
exclusion (a lock's defaults are `LOCK_CLAIMS`)::

    from contend.machines import LOCK_CLAIMS, LockMachine
    from contend.testing import run_machine

    class MyLockMachine(LockMachine):
        factory = staticmethod(make_lock)  # factory(client, key, ttl_ms)
        claims = LOCK_CLAIMS

    def test_my_lock_machine(contend_target):
        run_machine(MyLockMachine, contend_target, examples=50)

A machine is built with the server it runs on (`MyLockMachine(target)`), so
Hypothesis's `MyLockMachine.TestCase` does not apply: `contend.testing.run_machine`
runs it. A subclass may add rules and invariants of its own.
"""

from contend.impl.catalog import FENCING, FIFO
from contend.machines.base import PropertyViolated, ScheduledMachine
from contend.machines.family import family_machine
from contend.machines.locks import LockMachine
from contend.machines.queue import QueueMachine
from contend.machines.rate_limiter import RateLimiterMachine
from contend.machines.registry import RegistryMachine
from contend.machines.settings import machine_settings
from contend.machines.single_flight import SingleFlightMachine
from contend.machines.transactions import TransactionMachine
from contend.subject.claims import (
    LOCK_CLAIMS,
    QUEUE_CLAIMS,
    REGISTRY_CLAIMS,
    SEMAPHORE_CLAIMS,
    SINGLE_FLIGHT_CLAIMS,
    TRANSACTION_CLAIMS,
)

__all__ = [
    "FENCING",
    "FIFO",
    "LOCK_CLAIMS",
    "QUEUE_CLAIMS",
    "REGISTRY_CLAIMS",
    "SEMAPHORE_CLAIMS",
    "SINGLE_FLIGHT_CLAIMS",
    "TRANSACTION_CLAIMS",
    "LockMachine",
    "PropertyViolated",
    "QueueMachine",
    "RateLimiterMachine",
    "RegistryMachine",
    "ScheduledMachine",
    "SingleFlightMachine",
    "TransactionMachine",
    "family_machine",
    "machine_settings",
]
