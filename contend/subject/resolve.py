"""The one door for the code under test: a parsed spec (`contend.subject.spec`) becomes the
`Subject` that check, stress, load and each Locust process, `contend.testing`, the benchmarks and
the scoreboard run.

* `load(spec)`: the factory imported (or taken as given) and its signature checked, in whatever
  process runs it (a stress worker, a Locust process): no server touched, capabilities unknown.
* `on_target(subject, target)`: over the target's masters when it spans several, whether it is
  code for redis.asyncio, and what it offers beyond its protocol, found out on the target
  (check, `contend.testing`, the benchmarks). `resolve` is both steps.
* `trial(subject, client, where)`: before a run of it (stress, load), one object built on the
  server and, for a lock, one acquire and release: a run of code that cannot take one step is
  refused.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import redis

from contend.impl import catalog
from contend.servers.keyspace import Namespace
from contend.servers.tap import watching_servers
from contend.servers.target import Target
from contend.subject.claims import DEFAULT_CLAIMS
from contend.subject.loader import user_factory
from contend.subject.multi_master import MULTI_MASTER_SIGNATURE, over_masters, takes_one_client
from contend.subject.operations import check_operations_callable, load_operations, operations_are_async
from contend.subject.probe import (
    PROBE_SECONDS,
    FactoryRaised,
    bounded,
    check_offline,
    detect_async_capabilities,
    detect_capabilities,
    is_async,
    offline_object_of,
    try_once,
)
from contend.subject.protocols import NAMESPACE_KINDS, Capabilities, ProtocolError, check_object, factory_args
from contend.subject.spec import EVERY_KIND, SubjectSpec, parse_spec
from contend.subject.subject import Subject
from contend.values import family_label


def load(spec: SubjectSpec, *, offline_object: bool = False) -> Subject:
    """The row of `spec` before any server: its factory imported and its signature checked (a
    lock over masters must take the list of their clients). With `offline_object`, one object is
    also built on a client that is never connected and its methods checked (stress refuses a
    wrong factory so before its servers start)."""
    factory = user_factory(spec.factory, spec.kind)
    if spec.masters and takes_one_client(factory):
        raise ProtocolError(_one_client(spec, "its first parameter is annotated as one client"))
    if spec.kind == "operations":
        ops = load_operations(factory, spec.name, spec.operations, spec.model)
        offline = offline_object_of(factory, spec.kind)
        if offline is None:  # a factory that takes only a redis.asyncio client
            offline = offline_object_of(factory, spec.kind, asynchronous=True)
        asynchronous = False
        if offline is not None:
            check_operations_callable(offline, ops, spec.name)
            asynchronous = operations_are_async(offline, ops)
        return _with_operations(_row(spec, factory, None, asynchronous=asynchronous), ops)
    if offline_object and not spec.masters:
        check_offline(factory, spec.kind, spec.name)
    return _row(spec, factory, None)


def resolve(spec: SubjectSpec, target: Target) -> Subject:
    """`load(spec)`, then `on_target`: the row check and `contend.testing` run."""
    return on_target(load(spec), target)


def user_subject(
    factory: str | Callable[..., Any],
    kind: str,
    target: Target,
    *,
    claim: Sequence[str] = (),
    no_claim: Sequence[str] = (),
    operations: Any = None,
    model: Any = None,
) -> Subject:
    """The row of `package.module:factory` (or a factory object) of `kind` on `target` (over its
    masters when it has several), as `contend check --impl` builds it (`operations` and `model`:
    --kind operations' `--operations` and `--model`)."""
    masters = target.masters or None
    spec = parse_spec(
        factory,
        kind,
        EVERY_KIND,
        claim=claim,
        no_claim=no_claim,
        masters=masters,
        operations=operations,
        model=model,
    )
    assert spec is not None  # a factory and a kind
    return resolve(spec, target)


@watching_servers  # its capability probe makes round trips: to the target's servers only
def on_target(subject: Subject, target: Target) -> Subject:
    """The loaded row on `target`: a lock over masters becomes the one-server protocol over the
    target's masters (MULTI_MASTER_SIGNATURE), and what the code offers beyond its protocol
    (extend, a fencing token, register_many; async or not) is found out there."""
    spec = subject.spec
    assert spec is not None, "on_target takes a row that `load` made"
    factory = subject.factory
    if spec.masters:
        if target.masters != spec.masters:
            raise ProtocolError(
                f"--masters {spec.masters}: the target has {target.masters or 1} server(s); give "
                f"--redis-url {spec.masters} times or none (contend then starts the masters)"
            )
        factory = over_masters(factory, target.also)
    # An operations primitive's was found out when its object was built offline (`load`); the
    # others' probe builds objects: once.
    asynchronous = subject.asynchronous if subject.operations is not None else is_async(factory, spec.kind)
    client = target.client()
    ns = target.namespace(client=client)
    key = ns.prefix if spec.kind in NAMESPACE_KINDS else ns.key("probe")
    found_async: list[bool] = []  # operations found to be coroutines on the server
    try:
        if asynchronous:
            found = _named(
                spec.name,
                lambda: bounded(
                    lambda: detect_async_capabilities(factory, spec.kind, target.url, key), Capabilities()
                ),
            )
        else:

            def make() -> Any:
                obj = factory(client, *factory_args(spec.kind, key))
                check_object(obj, spec.kind, spec.name)
                if subject.operations is not None:
                    check_operations_callable(obj, subject.operations, spec.name)
                    if operations_are_async(obj, subject.operations):  # not built offline (`load`)
                        found_async.append(True)
                return obj

            found = _named(
                spec.name,
                lambda: bounded(lambda: detect_capabilities(factory, spec.kind, make), Capabilities()),
            )
    finally:
        ns.cleanup()
        client.close()
    if spec.masters and "'list' object has no attribute" in found.note:
        # A factory that took the list of clients for one client fails on its first command.
        raise ProtocolError(_one_client(spec, f"it used the list as one client ({found.note})"))
    if not asynchronous and subject.operations is not None:
        asynchronous = bool(found_async)
    row = _row(spec, factory, found, asynchronous=asynchronous)
    return _with_operations(row, subject.operations) if subject.operations is not None else row


def trial(subject: Subject, client: redis.Redis, where: str, *, also: Sequence[str] = ()) -> Subject:
    """Before a run of the code (stress, load): one object built on the server under `where` (a
    registry's namespace, a lock's key) with `client`, checked against the protocol, and for a
    lock one acquire and release of it; for a lock over masters, `client` is of the first master
    and `also` the others' URLs. ProtocolError (exit 2) when the factory raises or hangs, the
    object lacks a method, or the first acquire of a free lock raises: a run of code that cannot
    take one step measures nothing. The row, with what was found out (`note` says what was not)."""
    spec = subject.spec
    assert spec is not None, "trial takes a row that `load` made"
    factory = over_masters(subject.factory, also) if spec.masters else subject.factory
    found = try_once(factory, spec.kind, spec.name, client, where)
    if found is None:
        found = Capabilities(
            note=f"not found out: one acquire and release did not return within {PROBE_SECONDS:g} s"
        )
    return replace(subject, capabilities=found)


def library_subject(
    factory: Callable[..., Any],
    kind: str,
    *,
    name: str,
    summary: str,
    claims: frozenset[str],
    selector: tuple[str, ...],
    command: tuple[str, ...],
    asynchronous: bool | None = None,
) -> Subject:
    """The row of code that contend runs under a name of its own (a scoreboard library's adapter):
    whether it is code for redis.asyncio found out as for `--impl` unless told
    (`asynchronous`); its capabilities are found out by the battery (`with_capabilities`)."""
    return Subject(
        name,
        kind,
        factory,
        summary=summary,
        claims=claims,
        selector=selector,
        command=command,
        asynchronous=is_async(factory, kind) if asynchronous is None else asynchronous,
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
        return subject.factory(namespace.client, *factory_args(subject.family, key))

    found = bounded(lambda: detect_capabilities(subject.factory, subject.family, make), Capabilities())
    return replace(subject, capabilities=found)


def _row(
    spec: SubjectSpec,
    factory: Callable[..., Any],
    capabilities: Capabilities | None,
    *,
    asynchronous: bool = False,
) -> Subject:
    """The row of a user's factory: the kind's default claims (fencing too once a token is
    found), changed as --claim / --no-claim say, and the command line that names it."""
    flags = [*(f"--claim {c}" for c in spec.claim), *(f"--no-claim {c}" for c in spec.no_claim)]
    kind = family_label(spec.kind)  # as the command line spells it (single-flight, rate-limiter)
    selector = ("--impl", spec.name, "--kind", kind, *(part for f in flags for part in f.split()))
    claims = set(DEFAULT_CLAIMS[spec.kind]) | (
        {catalog.FENCING} if capabilities and capabilities.fencing else set()
    )
    if spec.masters:
        selector = (*selector, "--masters", str(spec.masters))
    if spec.kind == "operations":
        selector = (*selector, *_operation_flags(spec))
    return Subject(
        spec.name,
        spec.kind,
        factory,
        summary="user implementation (async)" if asynchronous else "user implementation",
        claims=frozenset((claims | set(spec.claim)) - set(spec.no_claim)),
        capabilities=capabilities,
        selector=selector,
        claim_changes=tuple(flags),
        asynchronous=asynchronous,
        masters=spec.masters,
        spec=spec,
    )


def _with_operations(row: Subject, operations: Any) -> Subject:
    """A user's own primitive's row: its operation list. It runs on a Redis Cluster too: the
    re-run specification's snapshot (SCAN, DUMP, PTTL) and RESTORE of its namespace go to every
    node (the cluster client's), and keys of one command that span slots are cluster-slots."""
    return replace(row, operations=operations)


def _operation_flags(spec: SubjectSpec) -> tuple[str, ...]:
    """`--operations M:A` and `--model M:C` as given (the replay line names them again)."""
    flags: list[str] = []
    if isinstance(spec.operations, str):
        flags += ["--operations", spec.operations]
    if isinstance(spec.model, str):
        flags += ["--model", spec.model]
    return tuple(flags)


def _one_client(spec: SubjectSpec, what: str) -> str:
    """The one refusal of a factory given --masters that takes one client, not their list."""
    return (
        f"--impl {spec.name}: with --masters {spec.masters} it is called as {MULTI_MASTER_SIGNATURE}, and "
        f"{what}: a lock that spans masters takes the list of their clients (drop --masters for a lock "
        "on one server)"
    )


def _named(name: str, probe: Callable[[], Capabilities]) -> Capabilities:
    """`probe()`, with a factory that raised named as the command line names it."""
    try:
        return probe()
    except FactoryRaised as exc:
        raise FactoryRaised(f"--impl {name}: {exc}") from None
