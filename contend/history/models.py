"""What a history is checked against: one table from model name to models and named invariants.

`contend history check --model NAME` and `contend stress` both build their
check from `HISTORY_MODELS`, so a history kept by a stress run re-checks
exactly as it was checked (the stress run prints the command, with the
options its check used). Each entry lists the operations a history for it may
hold: any other name is an error unless the check is lenient.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contend.exitcodes import ExitCode
from contend.history.checker import NothingToCheck, check_calls
from contend.history.invariants import (
    Invariant,
    Violation,
    critical_sections,
    fencing_tokens,
    lease_validity,
    lock_holds,
    locked_counter,
    registry_errors,
    registry_ids,
)
from contend.history.records import Call, Record, took_no_effect
from contend.history.verdict import Linearizability, Verdict
from contend.models.base import Model, Op, partition_by_key
from contend.models.cas_register import ALIASES as CAS_ALIASES
from contend.models.cas_register import CasRegisterModel
from contend.models.kv import ALIASES as KV_ALIASES
from contend.models.kv import KvModel
from contend.models.lease import CLIENT_OPERATIONS, LeaseModel
from contend.models.registry import RegistryModel
from contend.models.registry_by_name import RegistryByNameModel

#: Search budget (s) of a model that a more partitioned one can stand in for.
WHOLE_BUDGET = 5.0


class LockRunModel(LeaseModel):
    """The lease model over a lock run's history: the counter's operations are left to the invariants."""

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return partition_by_key([op for op in ops if op.f in (*CLIENT_OPERATIONS, "expire")])


@dataclass(frozen=True)
class NamedInvariant:
    """A linear-time check over the calls, under the name its violations carry."""

    name: str
    check: Invariant

    def __call__(self, calls: Sequence[Call]) -> list[Violation]:
        return self.check(calls)


@dataclass(frozen=True)
class Options:
    """What a model's checks depend on beyond the history itself."""

    #: A lock's lease may run out unseen before any operation (real TTLs).
    lease_expiry: bool = False
    #: The lease every acquire asked for, in ms: lease validity is checked when it is known.
    ttl_ms: int | None = None
    #: A lock's acquire may return False while it is free (Redlock's split vote under contention).
    may_refuse: bool = False


@dataclass(frozen=True)
class HistoryCheck:
    """The models to search, strongest first (the next decides when one runs out of time), and the
    invariants that go with them."""

    model: str
    models: tuple[Model[Any], ...]
    invariants: tuple[NamedInvariant, ...]

    @property
    def invariant_names(self) -> list[str]:
        return [i.name for i in self.invariants]

    def run(
        self,
        calls: Sequence[Call],
        *,
        nemesis: Sequence[Record] = (),
        timeout: float | None = None,
        all_partitions: bool = False,
        search: bool = True,
        require_effect: bool = True,
    ) -> tuple[Verdict | None, list[Violation]]:
        """(the linearizability verdict, or None without `search`; the invariants' violations).

        `timeout` is the budget of the whole search: a model with a successor
        gets WHOLE_BUDGET of it at most, the last one what is left. A history
        in which no operation took effect is linearizable (nothing constrains
        it); `require_effect` refuses it instead (NothingToCheck), as a stress
        run does: a run whose every operation failed tested nothing.
        """
        violations = [v for check in self.invariants for v in check(calls)]
        if not search:
            return None, violations
        if require_effect and not any(c.status == "ok" for c in calls):
            raise NothingToCheck(_nothing_took_effect(calls))
        started = time.perf_counter()
        verdict: Verdict | None = None
        for k, model in enumerate(self.models):
            left = None if timeout is None else max(timeout - (time.perf_counter() - started), 0.001)
            last = k == len(self.models) - 1
            budget = left if last or left is None else min(left, WHOLE_BUDGET)
            verdict = check_calls(
                calls, model, timeout=budget, nemesis=nemesis, all_partitions=all_partitions
            )
            if verdict.outcome is not Linearizability.UNKNOWN:
                break
        if verdict is not None:
            verdict.model = self.model  # the model's name as `--model` spells it, not its class's
            if timeout is not None:
                verdict.timeout = timeout
        return verdict, violations


def _nothing_took_effect(calls: Sequence[Call]) -> str:
    if not calls:
        return "nothing to check: the history has no client operation (only nemesis events?)"
    return (
        f"nothing to check: none of the {len(calls)} operation(s) took effect ({took_no_effect(calls)}), "
        "so no verdict can be reached"
    )


def exit_code(verdict: Verdict | None, violations: Sequence[Violation]) -> int:
    """0 linearizable and every invariant holds, 1 not linearizable or an invariant broken,
    3 unknown (the search budget ran out); `verdict` None: the search was skipped."""
    if violations or (verdict is not None and verdict.outcome is Linearizability.NOT_LINEARIZABLE):
        return ExitCode.FAILED
    if verdict is not None and verdict.outcome is Linearizability.UNKNOWN:
        return ExitCode.INCONCLUSIVE
    return ExitCode.OK


@dataclass(frozen=True)
class HistoryModel:
    """One row of the table: a model name, what it checks, the operations it accepts."""

    name: str
    summary: str
    operations: tuple[str, ...]
    build: Callable[[Sequence[Call], Options], HistoryCheck]

    def unknown_operations(self, calls: Sequence[Call]) -> dict[str, int]:
        """Operation names in `calls` this model does not accept, with how many calls have each."""
        out: dict[str, int] = {}
        for c in calls:
            if c.f not in self.operations:
                out[c.f] = out.get(c.f, 0) + 1
        return out


def _cas_register(calls: Sequence[Call], options: Options) -> HistoryCheck:
    return HistoryCheck("cas-register", (CasRegisterModel(),), ())


def _kv(calls: Sequence[Call], options: Options) -> HistoryCheck:
    return HistoryCheck("kv", (KvModel(),), ())


def _registry(calls: Sequence[Call], options: Options) -> HistoryCheck:
    # Whole first (ids 1..n without gaps are part of its state), then name by name, which
    # scales to any length but cannot check register_many (it spans names).
    spans_names = any(c.f == "register_many" for c in calls)
    models: tuple[Model[Any], ...] = (
        (RegistryModel(),) if spans_names else (RegistryModel(), RegistryByNameModel())
    )
    return HistoryCheck(
        "registry",
        models,
        (NamedInvariant("registry ids", registry_ids), NamedInvariant("registry errors", registry_errors)),
    )


def _mutex(calls: Sequence[Call], options: Options) -> HistoryCheck:
    fenced = any(
        c.f == "acquire" and isinstance(c.output, int) and not isinstance(c.output, bool) for c in calls
    )
    # A stress run's lock history also holds the writes the lock protects (incr, read): the
    # model checks the lock's own operations, and holds count up to the last write that landed.
    writes = any(c.f == "incr" for c in calls)
    checks: list[NamedInvariant] = []
    if writes:
        checks.append(NamedInvariant("critical sections", critical_sections))
        checks.append(NamedInvariant("locked counter", locked_counter))
    elif options.ttl_ms is not None or not options.lease_expiry:
        # A lease that may run out unseen bounds a hold only when its TTL is known.
        checks.append(NamedInvariant("lock holds", functools.partial(lock_holds, ttl_ms=options.ttl_ms)))
    ttl_ms = options.ttl_ms
    if ttl_ms is not None:
        checks.append(NamedInvariant("lease validity", lambda cs: lease_validity(cs, ttl_ms)))
    if fenced:
        checks.append(NamedInvariant("fencing tokens", fencing_tokens))
    model = LockRunModel(
        fenced=fenced, spontaneous_expiry=options.lease_expiry, may_refuse=options.may_refuse
    )
    return HistoryCheck("mutex", (model,), tuple(checks))


#: Model name → what `--model NAME` checks.
HISTORY_MODELS: dict[str, HistoryModel] = {
    m.name: m
    for m in (
        HistoryModel(
            "cas-register",
            "a register: read → value, write(v), cas([old, new]) → true/false; one partition per key",
            ("read", "write", "cas", *CAS_ALIASES),
            _cas_register,
        ),
        HistoryModel(
            "kv",
            "a key-value map: get → value, put(v), append(v) (Porcupine's kv); one partition per key",
            ("get", "put", "append", *KV_ALIASES),
            _kv,
        ),
        HistoryModel(
            "registry",
            "a name→ID registry: register(name) → id, register_many(names) → ids, lookup(name) → id "
            "or null, reverse(id) → name or null, count() → n; invariants: registry ids, registry errors",
            ("register", "register_many", "lookup", "reverse", "count"),
            _registry,
        ),
        HistoryModel(
            "mutex",
            "a lock: acquire → true/false (or a fencing token), release, extend, expire (nemesis-free "
            "lease end); incr and read of a counter the lock protects; invariants: lock holds (not "
            "with --lease-expiry unless --ttl-ms bounds a lease), or critical sections and locked "
            "counter when the history has incr; lease validity with --ttl-ms; fencing tokens when "
            "acquire returns integers",
            (*CLIENT_OPERATIONS, "expire", "incr", "read"),
            _mutex,
        ),
    )
}

#: The names `--model` accepts.
MODELS = tuple(HISTORY_MODELS)


def history_check(
    name: str,
    calls: Sequence[Call],
    *,
    lease_expiry: bool = False,
    ttl_ms: int | None = None,
    may_refuse: bool = False,
) -> HistoryCheck:
    """The check a model name stands for, built for `calls` (some invariants depend on what they hold)."""
    try:
        entry = HISTORY_MODELS[name]
    except KeyError:
        raise ValueError(f"unknown model {name!r}: expected one of {', '.join(MODELS)}") from None
    return entry.build(calls, Options(lease_expiry=lease_expiry, ttl_ms=ttl_ms, may_refuse=may_refuse))
