"""The code under test as one row of a run: a catalog implementation or the user's `--impl`, with
the properties it claims and the capabilities it was found to have. check, stress, load, the
scoreboard and `contend.testing` all build their subjects here."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from contend.impl import catalog
from contend.servers.keyspace import Namespace
from contend.servers.tap import watching_servers
from contend.servers.target import Target
from contend.subject.claims import DEFAULT_CLAIMS, check_claim_names
from contend.subject.loader import factory_name, user_factory
from contend.subject.multi_master import MULTI_MASTER_SIGNATURE, over_masters, takes_one_client
from contend.subject.probe import (
    FactoryRaised,
    bounded,
    detect_async_capabilities,
    detect_capabilities,
    is_async,
)
from contend.subject.protocols import NAMESPACE_KINDS, Capabilities, ProtocolError, check_object


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
    #: The independent masters it spans (0: one server). Its factory here is the one-server
    #: protocol over them (contend.subject.multi_master.over_masters).
    masters: int = 0


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


def multi_master_subjects(target: Target, masters: int) -> list[Subject]:
    """Rows for the catalog's locks that span masters, over the target's `masters` masters."""
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


@watching_servers  # its capability probe makes round trips: to the target's servers only
def user_subject(
    spec: str | Callable[..., Any],
    kind: str,
    target: Target,
    *,
    claim: Sequence[str] = (),
    no_claim: Sequence[str] = (),
    masters: int = 0,
) -> Subject:
    """A row for `package.module:factory` (or a factory object), after checking it follows the
    protocol and finding out what it offers beyond it (extend, a fencing token, register_many).
    With `masters`, a lock factory that takes the list of the target's masters' clients
    (`target.url` first, then `target.also`): MULTI_MASTER_SIGNATURE.

    A factory object is named `module:qualname`, as `--impl` would name it (whether that name
    imports it back is for the caller to say: `contend.testing` does).
    """
    check_claim_names(kind, claim, "--claim")
    check_claim_names(kind, no_claim, "--no-claim")
    factory = user_factory(spec, kind)
    name = factory_name(spec)
    if masters:
        factory = _over_masters(factory, kind, name, masters, target)
        subject = _user_subject(factory, name, kind, target, claim, no_claim)
        _spans_masters(subject, name, masters)
        return replace(subject, masters=masters, selector=(*subject.selector, "--masters", str(masters)))
    return _user_subject(factory, name, kind, target, claim, no_claim)


def _over_masters(
    factory: Callable[..., Any], kind: str, name: str, masters: int, target: Target
) -> Callable[..., Any]:
    """A multi-master lock factory as the one-server protocol over the target's masters."""
    if kind != "lock":
        raise ProtocolError(
            f"--masters {masters} spans a lock over independent masters; --kind {kind} is not a lock"
        )
    if len(target.also) + 1 != masters:
        raise ProtocolError(
            f"--masters {masters}: the target has {len(target.also) + 1} server(s); give --redis-url {masters} times "
            "or none (contend then starts the masters)"
        )
    if takes_one_client(factory):
        raise ProtocolError(
            f"--impl {name}: with --masters {masters} it is called as {MULTI_MASTER_SIGNATURE}, but its first "
            "parameter is annotated as one client: a lock that spans masters takes the list of their clients "
            "(drop --masters to check a lock on one server)"
        )
    return over_masters(factory, target.also)


def _spans_masters(subject: Subject, name: str, masters: int) -> None:
    """A factory that took the list of clients for one client fails on its first command."""
    note = subject.capabilities.note if subject.capabilities else ""
    if "'list' object has no attribute" in note:
        raise ProtocolError(
            f"--impl {name}: with --masters {masters} it is called as {MULTI_MASTER_SIGNATURE}, and it used the "
            f"list as one client ({note}): a lock that spans masters takes the list of their clients "
            "(drop --masters to check a lock on one server)"
        )


def _user_subject(
    factory: Callable[..., Any],
    name: str,
    kind: str,
    target: Target,
    claim: Sequence[str],
    no_claim: Sequence[str],
) -> Subject:
    """The row for a loaded factory, its capabilities found out on the target."""
    asynchronous = is_async(factory, kind)  # builds probe objects: once
    if asynchronous:
        flags = [*(f"--claim {c}" for c in claim), *(f"--no-claim {c}" for c in no_claim)]
        probe_ns = target.namespace(client=target.client())
        try:
            key = probe_ns.prefix if kind in NAMESPACE_KINDS else probe_ns.key("probe")
            found = _named(
                name,
                lambda: bounded(
                    lambda: detect_async_capabilities(factory, kind, target.url, key), Capabilities()
                ),
            )
        finally:
            probe_ns.cleanup()
            probe_ns.client.close()
        claims = set(DEFAULT_CLAIMS[kind]) | ({catalog.FENCING} if found.fencing else set())
        return Subject(
            name,
            kind,
            factory,
            summary="user implementation (async)",
            claims=frozenset((claims | set(claim)) - set(no_claim)),
            capabilities=found,
            selector=("--impl", name, "--kind", kind, *(part for f in flags for part in f.split())),
            claim_changes=tuple(flags),
            asynchronous=True,
        )
    client = target.client()
    ns = target.namespace(client=client)
    try:

        def make() -> Any:
            obj = (
                factory(client, ns.prefix)
                if kind in NAMESPACE_KINDS
                else factory(client, ns.key("probe"), 10_000)
            )
            check_object(obj, kind, name)
            return obj

        capabilities = _named(
            name, lambda: bounded(lambda: detect_capabilities(factory, kind, make), Capabilities())
        )
    finally:
        ns.cleanup()
        client.close()
    claims = set(DEFAULT_CLAIMS[kind])
    if capabilities.fencing:
        claims.add(catalog.FENCING)
    claims = (claims | set(claim)) - set(no_claim)
    flags = [*(f"--claim {c}" for c in claim), *(f"--no-claim {c}" for c in no_claim)]
    selector = ("--impl", name, "--kind", kind, *(part for f in flags for part in f.split()))
    return Subject(
        name,
        kind,
        factory,
        summary="user implementation",
        claims=frozenset(claims),
        capabilities=capabilities,
        selector=selector,
        claim_changes=tuple(flags),
    )


def with_capabilities(subject: Subject, target: Target, namespace: Namespace) -> Subject:
    """The subject with its capabilities found out (catalog subjects are probed before their checks)."""
    if subject.capabilities is not None:
        return subject
    if subject.asynchronous:  # not probed yet: no extend, token or register_many checks for async code
        return replace(subject, capabilities=Capabilities())
    key = namespace.key(subject.name, "probe")

    def make() -> Any:
        if subject.family in NAMESPACE_KINDS:
            return subject.factory(namespace.client, namespace.child(subject.name, f"probe-{subject.family}"))
        return subject.factory(namespace.client, key, 10_000)

    found = bounded(lambda: detect_capabilities(subject.factory, subject.family, make), Capabilities())
    return replace(subject, capabilities=found)


def _named(name: str, probe: Callable[[], Capabilities]) -> Capabilities:
    """`probe()`, with a factory that raised named as the command line names it."""
    try:
        return probe()
    except FactoryRaised as exc:
        raise FactoryRaised(f"--impl {name}: {exc}") from None
