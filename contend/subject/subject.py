"""The code under test as one row of a run: a catalog implementation or the user's `--impl`, with
the properties it claims and the capabilities it was found to have. The catalog's rows are made
here; a user's code goes through `contend.subject.resolve`, the one door for it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contend.impl import catalog
from contend.servers.target import Target
from contend.subject.multi_master import over_masters
from contend.subject.protocols import Capabilities
from contend.subject.spec import SubjectSpec


@dataclass(frozen=True)
class Subject:
    """One row of the table: an implementation and what is expected of it."""

    name: str
    family: str
    factory: Callable[..., Any]
    known_bad: bool = False
    violates: frozenset[str] = frozenset()
    summary: str = ""
    dbs: tuple[int, ...] = ()
    claims: frozenset[str] = frozenset()
    capabilities: Capabilities | None = None
    #: How the command line names this subject (for replay commands): --only NAME, or --impl ...
    selector: tuple[str, ...] = ()
    #: The command the selector goes with.
    command: tuple[str, ...] = ("contend", "check")
    #: What was added to or dropped from the defaults (--claim / --no-claim), for the table.
    claim_changes: tuple[str, ...] = ()
    #: Its methods are coroutines (redis.asyncio): the async battery runs.
    asynchronous: bool = False
    #: Why it runs on one server only ("" when it runs on a Redis Cluster too).
    single_node: str = ""
    #: The independent masters it spans (0: one server). Once on a target, its factory is the
    #: one-server protocol over them (contend.subject.multi_master.over_masters); as loaded (in a
    #: stress worker, say), the factory as written, taking the list of their clients.
    masters: int = 0
    #: What `--impl` parsed to, for a user's code (contend.subject.resolve made the row).
    spec: SubjectSpec | None = None
    #: A user's own primitive (--kind operations): its operations and model
    #: (contend.subject.operations.OperationList).
    operations: Any = None


def catalog_subjects(families: Sequence[str], names: Sequence[str] = ()) -> list[Subject]:
    """Rows for the catalog's implementations of `families` (only `names` if given)."""
    chosen = (
        [catalog_implementation(n) for n in names]
        if names
        else [*catalog.IMPLEMENTATIONS, *catalog.ASYNC_IMPLEMENTATIONS]
    )
    return [
        Subject(
            impl.name,
            impl.family,
            impl.factory,
            impl.known_bad,
            impl.violates,
            impl.summary,
            catalog.SEED_LAYOUT_DBS if impl.name.startswith("seed_layout") else (),
            impl.claims,
            selector=("--only", impl.name),
            asynchronous=impl.asynchronous,
            single_node=impl.single_node,
        )
        for impl in chosen
        if impl.family in families
    ]


def multi_master_subjects(target: Target) -> list[Subject]:
    """Rows for the catalog's locks that span masters, over the target's masters."""
    masters = target.masters
    return [
        Subject(
            impl.name,
            impl.family,
            over_masters(impl.factory, target.also),
            impl.known_bad,
            impl.violates,
            impl.summary,
            claims=impl.claims,
            selector=("--masters", str(masters)),
            masters=masters,
        )
        for impl in catalog.MULTI_MASTER_IMPLEMENTATIONS
    ]


def catalog_implementation(name: str) -> catalog.Implementation:
    """A catalog implementation, sync or async; KeyError naming both lists otherwise."""
    try:
        return catalog.by_name(name)
    except KeyError:
        try:
            return catalog.async_by_name(name)
        except KeyError:
            raise KeyError(
                f"no implementation called {name!r}; the catalog has "
                f"{', '.join(i.name for i in (*catalog.IMPLEMENTATIONS, *catalog.ASYNC_IMPLEMENTATIONS))}"
            ) from None
