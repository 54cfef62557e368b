"""What a stress run drives and how its history is checked (`StressWorkload`): a catalog
implementation, or the user's code taken through the one door for it (contend.subject.resolve)
and tried on the server before any worker starts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import redis

from contend.errors import ContendError
from contend.history.models import HistoryCheck, history_check
from contend.history.records import Call
from contend.impl.catalog import IMPLEMENTATIONS, Implementation, by_name
from contend.servers.keyspace import Namespace
from contend.stress.workers import FAMILIES, catalog_fencing
from contend.subject.multi_master import MULTI_MASTER_LOCKS
from contend.subject.probe import is_async
from contend.subject.resolve import load, trial
from contend.subject.spec import Scope, SubjectSpec
from contend.subject.subject import Subject
from contend.values import family_label

#: The families stress runs, in words ("registry, lock and transaction").
FAMILY_WORDS = ", ".join(FAMILIES[:-1]) + " and " + FAMILIES[-1]

#: What stress runs of the user's code: the registry, lock and transaction families.
STRESS_SCOPE = Scope(
    named=", ".join(family_label(f) for f in FAMILIES[:-1]) + " or " + family_label(FAMILIES[-1]),
    kinds=FAMILIES,
    other_kind=f"--kind {{label}}: stress runs the {FAMILY_WORDS} families; check {{what}} with "
    "`contend check --impl {spec} --kind {label}`",
)


@dataclass(frozen=True)
class StressWorkload:
    """What runs and how its history is checked: the model, the calls it sees, the linear-time
    invariants. `name` is a catalog name, or `package.module:factory` for a user's implementation
    (`kind` set)."""

    name: str
    family: str
    factory: Callable[..., Any]
    ttl_ms: int = 500
    kind: str | None = None
    #: Where a lock's fencing token comes from (None: not fenced, writes go straight to the counter).
    fencing: str | None = None
    #: For a user's lock: how its fencing was found out, in words.
    probe: str = ""
    #: A lock whose acquire may lose to contention while it is free (Redlock's split vote).
    may_refuse: bool = False
    #: The lock's independent masters (--masters N, or DEFAULT_MASTERS for a catalog Redlock); 0: none.
    masters: int = 0
    #: A user's code, as the one door (contend.subject.resolve) returned it; None for the catalog's.
    subject: Subject | None = None

    @property
    def user(self) -> bool:
        """A user's `package.module:factory`, not a catalog implementation."""
        return self.kind is not None

    @property
    def fenced(self) -> bool:
        return self.fencing is not None

    def fencing_note(self) -> str:
        """A lock's fencing in words: where the token comes from and where the writes go."""
        if self.fenced:
            return f"fencing token from {self.fencing}: writes go through FencedResource"
        return f"no fencing token{self.probe}: writes go straight to the counter"

    @property
    def history_model(self) -> str:
        """The `contend history check --model` that re-checks a kept history."""
        return {"registry": "registry", "lock": "mutex"}.get(self.family, self.family)

    def history_check(self, calls: Sequence[Call]) -> HistoryCheck:
        """The check of the run's history: `contend history check` builds the same one from the
        model name and the options `recheck_options` gives it."""
        lock = self.family == "lock"
        return history_check(
            self.history_model,
            calls,
            lease_expiry=lock,
            ttl_ms=self.ttl_ms if lock else None,
            may_refuse=self.may_refuse,
        )

    def recheck_options(self) -> str:
        """The `contend history check` options that rebuild this run's check."""
        if self.family != "lock":
            return ""
        return f" --lease-expiry --ttl-ms {self.ttl_ms}" + (" --may-refuse" if self.may_refuse else "")


def stressable() -> list[Implementation]:
    """Catalog implementations `contend stress` can drive."""
    return [i for i in IMPLEMENTATIONS if i.family in FAMILIES]


def catalog_workload(name: str, ttl_ms: int) -> StressWorkload:
    """A catalog implementation stress can drive (--only NAME); ContendError naming those it can."""
    if name in MULTI_MASTER_LOCKS:
        lock = MULTI_MASTER_LOCKS[name]
        return StressWorkload(lock.name, "lock", lock.build, ttl_ms, may_refuse=True)
    names = ", ".join([*(i.name for i in stressable()), *MULTI_MASTER_LOCKS])
    try:
        impl = by_name(name)
    except KeyError:
        raise ContendError(f"--only {name!r}: no such implementation; stress runs: {names}") from None
    if impl.family not in FAMILIES:
        raise ContendError(
            f"--only {impl.name} is a {impl.family}; stress runs the {FAMILY_WORDS} families "
            f"({names}); use `contend check` for the others"
        )
    return StressWorkload(impl.name, impl.family, impl.factory, ttl_ms, fencing=catalog_fencing(impl))


def user_workload(spec: SubjectSpec, ttl_ms: int) -> StressWorkload:
    """A user's `package.module:factory`, through the one door: imported, its signature checked
    and (on one server) one object of it checked before a server starts."""
    subject = load(spec, offline_object=True)
    if subject.family == "transaction" and is_async(subject.factory, subject.family):
        raise ContendError(
            f"--impl {subject.name}: stress runs synchronous banks (redis.Redis); check a redis.asyncio "
            f"bank with `contend check --impl {subject.name} --kind transaction`"
        )
    # A try-lock over several masters may lose a split vote: a refusal, not a fault.
    return StressWorkload(
        subject.name,
        subject.family,
        subject.factory,
        ttl_ms,
        kind=subject.family,
        may_refuse=bool(spec.masters),
        subject=subject,
    )


def tried(workload: StressWorkload, namespace: Namespace, master_urls: Sequence[str] = ()) -> StressWorkload:
    """A user's implementation, tried on the server before any worker starts (`resolve.trial`):
    the factory makes an object with the protocol's methods, and for a lock one acquire and
    release tell where its fencing token comes from. A catalog workload is returned as is."""
    if workload.subject is None:
        return workload
    where = namespace.child("probe") if workload.family == "registry" else namespace.key("probe")
    if master_urls:  # the user's lock over the masters: tried on them, through one-server eyes
        first = redis.Redis.from_url(master_urls[0], socket_connect_timeout=5)
        try:
            subject = trial(workload.subject, first, where, also=master_urls[1:])
        finally:
            first.close()
    else:
        subject = trial(workload.subject, namespace.client, where)
    found = subject.capabilities
    if workload.family != "lock" or found is None:
        return replace(workload, subject=subject)
    if found.note:
        note = f" ({found.note})"
    else:
        note = (
            "" if found.fencing else " (a trial acquire returned no int and left no fencing_token attribute)"
        )
    return replace(workload, fencing=found.fencing, probe=note, subject=subject)
