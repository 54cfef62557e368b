"""Which state machine checks an implementation: one per family."""

from typing import Any

from contend.impl.catalog import CRASH_LIVENESS, SAFE_RELEASE
from contend.machines.base import ScheduledMachine


def family_machine(impl: Any) -> type[ScheduledMachine]:
    """The machine class for a catalog entry (or anything with name, family, factory, claims)."""
    from contend.machines import locks, registry, single_flight

    if impl.family == "registry":
        from contend.impl.catalog import SEED_LAYOUT_DBS

        dbs = SEED_LAYOUT_DBS if impl.name.startswith("seed_layout") else ()
        return registry.machine_for(impl.factory, dbs=dbs, name=impl.name)
    if impl.family == "lock":
        return locks.machine_for(impl)
    if impl.family == "semaphore":
        # Leases are judged on the server's clock (TIME in the scripts), which the
        # virtual clock cannot move: crash liveness is the battery's to check.
        claims = frozenset(impl.claims) - {CRASH_LIVENESS, SAFE_RELEASE}
        return locks.machine_for(_with_claims(impl, claims), limit=2)
    if impl.family == "single_flight":
        return single_flight.machine_for(impl)
    raise ValueError(f"no state machine for the {impl.family!r} family yet")


def _with_claims(impl: Any, claims: frozenset[str]) -> Any:
    from dataclasses import replace

    return replace(impl, claims=claims)
