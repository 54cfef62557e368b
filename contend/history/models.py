"""Models of whole histories: what `contend history check --model NAME` checks against.

`model_for` maps a model name to its sequential model and the linear-time
invariants that go with it; `LockRunModel` is the lease model over a lock
run's history, whose counter operations are left to the invariants.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from contend.history.invariants import Invariant, critical_sections, fencing_tokens, lock_holds, registry_ids
from contend.history.records import Call
from contend.models.base import Model, Op, partition_by_key
from contend.models.cas_register import CasRegisterModel
from contend.models.kv import KvModel
from contend.models.lease import CLIENT_OPERATIONS, LeaseModel
from contend.models.registry_by_name import RegistryByNameModel

#: The names `--model` accepts.
MODELS = ("cas-register", "kv", "registry", "mutex")


class LockRunModel(LeaseModel):
    """The lease model over a lock run's history: the counter's operations are left to the invariants."""

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return partition_by_key([op for op in ops if op.f in (*CLIENT_OPERATIONS, "expire")])


def model_for(
    name: str, calls: Sequence[Call], *, lease_expiry: bool = False
) -> tuple[Model[Any], list[Invariant]]:
    """The model a --model name stands for, and the linear-time checks that go with it."""
    if name == "cas-register":
        return CasRegisterModel(), []
    if name == "kv":
        return KvModel(), []
    if name == "registry":
        return RegistryByNameModel(), [registry_ids]
    if name == "mutex":
        fenced = any(
            c.f == "acquire" and isinstance(c.output, int) and not isinstance(c.output, bool) for c in calls
        )
        # A stress run's lock history also holds the writes the lock protects (incr, read): the
        # model checks the lock's own operations, and holds count up to the last write that landed.
        writes = any(c.f == "incr" for c in calls)
        checks: list[Invariant] = [critical_sections if writes else lock_holds]
        if fenced:
            checks.append(fencing_tokens)
        return LockRunModel(fenced=fenced, spontaneous_expiry=lease_expiry), checks
    raise ValueError(f"unknown model {name!r}")
