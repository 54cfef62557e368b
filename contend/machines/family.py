"""Which state machine checks an implementation: one per family."""

from typing import Any

from contend.impl.catalog import SEED_LAYOUT_DBS
from contend.machines import locks, operations, queue, rate_limiter, registry, single_flight, transactions
from contend.machines.base import ScheduledMachine
from contend.machines.cancelling import CANCEL_RULES, REGISTRY_CANCEL_RULES
from contend.machines.masters import masters_machine


def family_machine(impl: Any) -> type[ScheduledMachine]:
    """The machine class for a catalog entry (or anything with name, family, factory, claims).

    A semaphore runs the lock machine with two slots. Leases judged on the server's clock
    (TIME in a script) do not follow the virtual clock: the machine sees such scripts and
    leaves the judgements that need a lease to run out to the battery's real-time checks.
    """
    machine = _family_machine(impl)
    if getattr(impl, "asynchronous", False):
        # The same rules and properties; the clients are redis.asyncio ones and the operations
        # coroutines, each run on its client's own loop (contend.schedule.async_gate).
        extra = {"lock": CANCEL_RULES, "semaphore": CANCEL_RULES, "registry": REGISTRY_CANCEL_RULES}.get(
            impl.family, {}
        )
        machine = type(machine.__name__, (machine,), {"asynchronous": True, **extra})
    return machine


def _family_machine(impl: Any) -> type[ScheduledMachine]:
    if impl.family == "registry":
        dbs = SEED_LAYOUT_DBS if impl.name.startswith("seed_layout") else ()
        return registry.machine_for(impl.factory, dbs=dbs, name=impl.name)
    if impl.family == "lock" and getattr(impl, "masters", 0):
        return masters_machine(impl)
    if impl.family == "lock":
        return locks.machine_for(impl)
    if impl.family == "semaphore":
        return locks.machine_for(impl, limit=2)
    if impl.family == "single_flight":
        return single_flight.machine_for(impl)
    if impl.family == "transaction":
        return transactions.machine_for(impl)
    if impl.family == "queue":
        return queue.machine_for(impl)
    if impl.family == "operations":
        return operations.machine_for(impl)
    if impl.family == "rate_limiter":
        return rate_limiter.machine_for(impl)
    raise ValueError(f"no state machine for the {impl.family!r} family yet")
