"""The battery runner behind `contend check`: implementation × check, one verdict each.

A subject is one row: a catalog implementation or the user's `--impl`, with
the properties it claims and the capabilities it was found to have. What is
checked follows the claims: a user's lock claims mutual exclusion, safe
release, crash liveness and clock-skew safety by default, fencing as soon as
it exposes a token; `--claim`/`--no-claim` add or drop one.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from contend.check.async_burst import ASYNC_LOCK_BURST, ASYNC_REGISTRY_BURST
from contend.check.async_faults import ASYNC_CRASH, ASYNC_EXPIRY
from contend.check.async_input import ASYNC_LOCK_BAD_INPUT, ASYNC_REGISTRY_BAD_INPUT
from contend.check.cancel import CANCEL
from contend.check.framework import (
    FAIL,
    INCONCLUSIVE,
    Check,
    CheckContext,
    CheckOptions,
    CheckResult,
    run_check,
)
from contend.check.locks import LOCK_CHECKS
from contend.check.protocols import (
    Capabilities,
    ProtocolError,
    check_factory_signature,
    check_object,
    detect_async_capabilities,
    detect_capabilities,
    is_async,
    load_factory,
    protocol,
)
from contend.check.registry import CHECKS as REGISTRY_CHECKS
from contend.check.schedule import SCHEDULE
from contend.check.semaphore import SEMAPHORE_CHECKS
from contend.check.single_flight import SINGLE_FLIGHT_CHECKS
from contend.impl import catalog
from contend.servers.cluster_client import CrossSlotError
from contend.servers.keyspace import Namespace
from contend.servers.target import Target

BATTERIES: dict[str, list[Check]] = {
    "registry": [*REGISTRY_CHECKS, SCHEDULE],
    "lock": [*LOCK_CHECKS, SCHEDULE],
    "semaphore": [*SEMAPHORE_CHECKS, SCHEDULE],
    "single_flight": [*SINGLE_FLIGHT_CHECKS, SCHEDULE],
}
#: The checks of async implementations (coroutine methods on redis.asyncio clients): bursts of tasks,
#: cancellation, bad input, and the family's state machine with async clients (which cancels
#: acquires, extends, releases and registrations too, and judges clock skew and a fencing token
#: there). Locks also get expiry and crashes (the holder's task held or killed at a round trip).
#: Single-flight has only the state machine so far.
ASYNC_BATTERIES: dict[str, list[Check]] = {
    "registry": [ASYNC_REGISTRY_BURST, ASYNC_REGISTRY_BAD_INPUT, SCHEDULE],
    "lock": [ASYNC_LOCK_BURST, ASYNC_EXPIRY, ASYNC_CRASH, CANCEL, ASYNC_LOCK_BAD_INPUT, SCHEDULE],
    "semaphore": [CANCEL, ASYNC_LOCK_BAD_INPUT, SCHEDULE],
    "single_flight": [SCHEDULE],
}

_LEASE = frozenset(
    {catalog.MUTUAL_EXCLUSION, catalog.CLOCK_SKEW_SAFE, catalog.SAFE_RELEASE, catalog.CRASH_LIVENESS}
)
#: What a user's implementation (--impl) is taken to claim, per family (fencing: when it has a token).
DEFAULT_CLAIMS: dict[str, frozenset[str]] = {
    "registry": catalog.REGISTRY_PROPERTIES,
    "lock": _LEASE,
    "semaphore": _LEASE,
    "single_flight": catalog.SINGLE_FLIGHT_PROPERTIES,
}

#: The sizes and budgets of a user's implementation (`contend check --impl`, contend.testing): more
#: interleavings than the catalog's, whose verdicts are known; real-time budgets of one check and
#: of the whole run, since code we did not write may hang.
USER_SCHEDULE_EXAMPLES = 200
USER_CHECK_SECONDS = 30.0
USER_RUN_SECONDS = 110.0


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

    def checks(self, only: Iterable[str] = ()) -> list[Check]:
        """The family's checks that apply to this subject (some need a claim or a capability)."""
        wanted = set(only)
        probe = replace(self, claims=self.claims | self.violates)
        battery = ASYNC_BATTERIES if self.asynchronous else BATTERIES
        return [
            check
            for check in battery[self.family]
            if check.applies(probe) and (not wanted or check.name in wanted)
        ]


@dataclass
class ResultRow:
    subject: Subject
    results: list[CheckResult] = field(default_factory=list)
    #: Why its checks did not run here (a single-node implementation on a Redis Cluster).
    skipped: str = ""

    @property
    def failed(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == FAIL]

    @property
    def inconclusive(self) -> list[CheckResult]:
        return [r for r in self.results if r.status == INCONCLUSIVE]

    @property
    def verdict(self) -> str:
        if self.skipped:
            return "skipped"
        if self.subject.known_bad:
            return "caught" if self.failed else "NOT CAUGHT"
        if self.failed:
            kinds = sorted({r.kind for r in self.failed})
            return f"FAIL ({', '.join(kinds)})"
        return "inconclusive" if self.inconclusive or not self.results else "pass"

    @property
    def as_expected(self) -> bool:
        return self.verdict in ("pass", "caught", "skipped")


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


def user_factory(spec: str | Callable[..., Any], kind: str) -> Callable[..., Any]:
    """Import `package.module:factory` (or take the factory itself) and check its signature,
    before any server is touched."""
    if kind not in BATTERIES:
        raise ProtocolError(f"--kind {kind!r} has no battery yet; choose one of {', '.join(BATTERIES)}")
    if isinstance(spec, str):
        factory = load_factory(spec)
    elif callable(spec):
        factory = spec
    else:
        raise ProtocolError(
            f"the factory {spec!r} is a {type(spec).__name__}, not a callable: pass the function or "
            f"class that makes a {kind}, called as {protocol(kind)[0]}, or 'package.module:factory'"
        )
    check_factory_signature(factory, kind, factory_name(spec))
    return factory


def factory_name(factory: str | Callable[..., Any]) -> str:
    """How a factory is named in the table and the evidence: `package.module:factory`."""
    if isinstance(factory, str):
        return factory
    module = getattr(factory, "__module__", None) or "?"
    qualname = getattr(factory, "__qualname__", None) or getattr(factory, "__name__", None)
    return f"{module}:{qualname or repr(factory)}"


def check_claim_names(kind: str, names: Iterable[str], option: str) -> None:
    """ProtocolError (exit 2) for a --claim/--no-claim a `kind` cannot make."""
    known = catalog.properties_of(kind)
    for name in names:
        if name not in known:
            raise ProtocolError(f"{option} {name!r}: a {kind} can claim {', '.join(sorted(known))}")


def user_subject(
    spec: str | Callable[..., Any],
    kind: str,
    target: Target,
    *,
    claim: Sequence[str] = (),
    no_claim: Sequence[str] = (),
) -> Subject:
    """A row for `package.module:factory` (or a factory object), after checking it follows the
    protocol and finding out what it offers beyond it (extend, a fencing token, register_many).

    A factory object is named `module:qualname`, as `--impl` would name it (whether that name
    imports it back is for the caller to say: `contend.testing` does).
    """
    check_claim_names(kind, claim, "--claim")
    check_claim_names(kind, no_claim, "--no-claim")
    factory = user_factory(spec, kind)
    name = factory_name(spec)
    asynchronous = is_async(factory, kind)  # builds probe objects: once
    if asynchronous:
        flags = [*(f"--claim {c}" for c in claim), *(f"--no-claim {c}" for c in no_claim)]
        probe_ns = target.namespace(client=target.client())
        try:
            key = probe_ns.prefix if kind == "registry" else probe_ns.key("probe")
            found = _bounded(
                lambda: detect_async_capabilities(factory, kind, target.url, key), Capabilities()
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
                factory(client, ns.prefix) if kind == "registry" else factory(client, ns.key("probe"), 10_000)
            )
            check_object(obj, kind, name)
            return obj

        capabilities = _bounded(lambda: detect_capabilities(factory, kind, make), Capabilities())
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
        if subject.family == "registry":
            return subject.factory(namespace.client, namespace.child(subject.name, "probe-registry"))
        return subject.factory(namespace.client, key, 10_000)

    found = _bounded(lambda: detect_capabilities(subject.factory, subject.family, make), Capabilities())
    return replace(subject, capabilities=found)


#: Seconds finding out an implementation's capabilities may take (one acquire and release).
PROBE_SECONDS = 5.0


def _bounded(probe: Callable[[], Capabilities], otherwise: Capabilities) -> Capabilities:
    """`probe()`, or `otherwise` if it does not return within PROBE_SECONDS (the checks will then
    report what hangs); a ProtocolError it raises is passed on."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["found"] = probe()
        except BaseException as exc:
            box["error"] = exc

    thread = threading.Thread(target=run, name="contend-probe", daemon=True)
    thread.start()
    thread.join(PROBE_SECONDS)
    if isinstance(box.get("error"), CrossSlotError):
        return otherwise  # on a Redis Cluster: the checks report the keys that span slots
    if "error" in box:
        raise box["error"]
    return box.get("found", otherwise)


def run_battery(
    target: Target,
    subjects: Sequence[Subject],
    options: CheckOptions,
    run_namespace: Namespace,
    on_result: Callable[[Subject, CheckResult], None] = lambda s, r: None,
    *,
    only_checks: Sequence[str] = (),
    stop: threading.Event | None = None,
    rows: list[ResultRow] | None = None,
    on_start: Callable[[Subject, str], None] = lambda s, name: None,
) -> list[ResultRow]:
    """Run each subject's family battery, one fresh namespace per check, cleaned after it.

    Rows are appended to `rows` as they fill, so an interrupted run still has the results so
    far; once `stop` is set, the check under way is abandoned and no other one starts.
    `on_start` hears of each check as it starts (the subject has its capabilities by then, so
    `subject.checks()` is the list that will run), `on_result` as it ends.
    """
    rows = [] if rows is None else rows
    run_deadline = None if options.run_seconds is None else time.monotonic() + options.run_seconds
    for subject in subjects:
        if stop is not None and stop.is_set():
            break
        if target.cluster and subject.single_node:
            rows.append(ResultRow(subject, skipped=subject.single_node))
            continue
        subject = with_capabilities(subject, target, run_namespace)
        row = ResultRow(subject)
        rows.append(row)
        for check in subject.checks(only_checks):
            if stop is not None and stop.is_set():
                break
            on_start(subject, check.name)
            left = None if run_deadline is None else run_deadline - time.monotonic()
            if left is not None and left < 1:
                result = CheckResult(
                    check.name, INCONCLUSIVE, "inconclusive (not run: the run's time budget was spent)", 0.0
                )
                row.results.append(result)
                on_result(subject, result)
                continue
            ns = Namespace(
                run_namespace.client,
                run_namespace.child(subject.name, check.name),
                dbs=subject.dbs,
                other_urls=run_namespace.other_urls,
            )
            sized = options
            if subject.asynchronous and row.failed:
                # Already caught (by the cancel check, say): no long hunt by the state machine,
                # which has no cancellation rule and cannot find what cancellation breaks.
                sized = replace(options, hunt_examples=options.schedule_examples)
            ctx = CheckContext(target, ns, subject.factory, sized, subject.dbs, subject)
            try:
                result = run_check(check, ctx, stop, left)
            except BaseException:  # interrupted: the row says so
                row.results.append(
                    CheckResult(check.name, INCONCLUSIVE, "inconclusive (the run was interrupted)", 0.0)
                )
                raise
            finally:
                gc.collect()  # finalizers of the check's objects (a lock released in __del__) run now
                ns.cleanup()
            row.results.append(result)
            on_result(subject, result)
    return rows
