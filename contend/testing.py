"""Check your own implementation from your own pytest suite, as `contend check --impl` does.

    from contend.testing import check_lock

    def test_my_lock(contend_target):
        check_lock(make_lock, contend_target)

`check_lock`, `check_semaphore`, `check_registry`, `check_single_flight`,
`check_transaction`, `check_queue` and `check_operations` (your own primitive) run the family's
`check_transaction`, `check_queue` and `check_rate_limiter` run the family's
battery (the same checks, claims, seeds and budgets as `contend check --impl M:F --kind
KIND`) against the factory, on the server of the `contend_target` fixture (or on an
embedded one started for the call). A broken property raises `ContendCheckFailed`, an
AssertionError whose message is the evidence the command prints: the property, the shrunk
interleaving and the replay line. An inconclusive check (its time budget ran out) fails too
unless `allow_inconclusive=True`. On success the result rows are returned.

`run_machine` runs one family state machine (`contend.machines.LockMachine` and its
siblings, subclassed and pointed at a factory) under Hypothesis; `machine_for` builds such a
subclass. See docs/TESTING.md.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, TypedDict

from hypothesis import settings as hypothesis_settings
from hypothesis.stateful import run_state_machine_as_test

from contend.check.battery import (
    BATTERIES,
    USER_CHECK_SECONDS,
    USER_RUN_SECONDS,
    USER_SCHEDULE_EXAMPLES,
    ResultRow,
    run_battery,
)
from contend.check.framework import CheckOptions
from contend.check.noise import quieted
from contend.check.report import claims_lines, evidence_lines
from contend.check.schedule import SCHEDULE, parse_replay
from contend.impl import catalog
from contend.machines.base import ScheduledMachine
from contend.machines.family import family_machine
from contend.machines.settings import machine_settings
from contend.schedule.gate import check_redis_py
from contend.servers.target import Target, open_target
from contend.subject.claims import DEFAULT_CLAIMS
from contend.subject.loader import factory_name
from contend.subject.protocols import protocol
from contend.subject.resolve import load, on_target
from contend.subject.spec import EVERY_KIND, SubjectSpec, parse_spec
from contend.values import family_label

if TYPE_CHECKING:
    from typing import Unpack

__all__ = [
    "KINDS",
    "CheckKwargs",
    "ContendCheckFailed",
    "check",
    "check_lock",
    "check_operations",
    "check_queue",
    "check_rate_limiter",
    "check_registry",
    "check_semaphore",
    "check_single_flight",
    "check_transaction",
    "machine_for",
    "report",
    "run_machine",
]

#: The kinds a factory can be checked as (the protocols of docs/protocol.md, "Your own code: the protocol").
KINDS: tuple[str, ...] = tuple(BATTERIES)  # single_flight; "single-flight" is accepted too


class ContendCheckFailed(AssertionError):
    """A check found a broken property (or could not decide): the message is the evidence
    `contend check` prints, `rows` the results."""

    def __init__(self, message: str, rows: list[ResultRow]) -> None:
        super().__init__(message)
        self.rows = rows


class CheckKwargs(TypedDict, total=False):
    """The options of `check` that its per-kind wrappers pass on."""

    claim: Sequence[str]
    no_claim: Sequence[str]
    checks: Sequence[str]
    schedule_examples: int
    seed: int
    shrink: bool
    shrink_seconds: float
    check_seconds: float
    run_seconds: float | None
    replay: str | None
    allow_inconclusive: bool
    masters: int
    client_retries: int
    operations: Any
    model: Any


def check(
    factory: Callable[..., Any] | str,
    target: Target | None = None,
    *,
    kind: str,
    claim: Sequence[str] = (),
    no_claim: Sequence[str] = (),
    checks: Sequence[str] = (),
    schedule_examples: int = USER_SCHEDULE_EXAMPLES,
    seed: int = 0,
    shrink: bool = True,
    shrink_seconds: float = CheckOptions.shrink_seconds,
    check_seconds: float = USER_CHECK_SECONDS,
    run_seconds: float | None = USER_RUN_SECONDS,
    replay: str | None = None,
    allow_inconclusive: bool = False,
    masters: int = 0,
    client_retries: int = 0,
    operations: Any = None,
    model: Any = None,
) -> list[ResultRow]:
    """Run the `kind` battery on `factory` (a callable, or 'package.module:factory'), as
    `contend check --impl ... --kind KIND` does with the same options; the result rows.

    `target` is the server (the `contend_target` fixture); None starts an embedded one for the
    call. `claim`/`no_claim` add or drop a property (`--claim`/`--no-claim`), `checks` runs only
    those checks (`--check`), `replay` re-runs one recorded schedule example (`--replay`);
    `shrink_seconds` bounds the shrinking of a schedule failure (`--shrink-seconds`).
    `masters` (odd, 3 to 9) checks a lock over that many independent masters, its factory
    called as factory(clients, key, ttl_ms) (`--masters N`): embedded ones, started for the
    call, or `target` and its `also` servers. `client_retries` gives the clients redis-py's
    Retry with that many resends (`--client-retries N`). For kind="operations", `operations`
    and `model` are the operation list and the model class (or 'module:attr' names of them;
    None: OPERATIONS and MODEL beside the factory), as `--operations` and `--model`.
    Raises ContendCheckFailed (an AssertionError) when a property broke, or when a check was
    inconclusive and `allow_inconclusive` is False; ValueError or TypeError on bad arguments and
    contend.subject.protocols.ProtocolError for a factory that does not follow the protocol,
    before any server is used.
    """
    __tracebackhide__ = True  # pytest shows the caller's line and the evidence, not this function
    kind = _kind(kind)
    _validate(factory, kind, claim, no_claim, checks, replay)
    if not isinstance(shrink_seconds, (int, float)) or shrink_seconds <= 0:
        raise ValueError(f"shrink_seconds={shrink_seconds!r}: give the seconds shrinking may take, above 0")
    check_redis_py()
    spec = parse_spec(
        factory,
        kind,
        EVERY_KIND,
        claim=claim,
        no_claim=no_claim,
        masters=masters or None,
        client_retries=client_retries,
        operations=operations,
        model=model,
    )
    assert spec is not None  # a factory and a kind
    loaded = load(spec)  # the factory's signature, before a server is touched
    options = CheckOptions(
        seed=seed,
        schedule_examples=schedule_examples,
        shrink=shrink,
        shrink_seconds=shrink_seconds,
        check_seconds=check_seconds,
        run_seconds=run_seconds,
        replay=replay,
    )
    only = [SCHEDULE.name] if replay else list(checks)
    with _server(target, spec) as server:
        client = server.client()
        run_ns = server.namespace(client=client)
        try:
            subject = on_target(loaded, server)
            with quieted() as noise:
                rows = run_battery(server, [subject], options, run_ns, only_checks=only)
        finally:
            run_ns.cleanup()
            client.close()
    undecided = any(row.inconclusive or not row.results for row in rows)
    if any(row.failed for row in rows) or (undecided and not allow_inconclusive):
        call = _call_text(factory, kind, claim, no_claim, operations=operations, model=model)
        raise ContendCheckFailed(report(rows, noise.summary(), replay_call=call), rows)
    return rows


def check_lock(
    factory: Callable[..., Any] | str, target: Target | None = None, **options: Unpack[CheckKwargs]
) -> list[ResultRow]:
    """`check(factory, target, kind="lock", ...)`: factory(client, key, ttl_ms) -> a lock."""
    __tracebackhide__ = True
    return check(factory, target, kind="lock", **options)


def check_semaphore(
    factory: Callable[..., Any] | str, target: Target | None = None, **options: Unpack[CheckKwargs]
) -> list[ResultRow]:
    """`check(factory, target, kind="semaphore", ...)`: factory(client, key, ttl_ms, limit=1)."""
    __tracebackhide__ = True
    return check(factory, target, kind="semaphore", **options)


def check_registry(
    factory: Callable[..., Any] | str, target: Target | None = None, **options: Unpack[CheckKwargs]
) -> list[ResultRow]:
    """`check(factory, target, kind="registry", ...)`: factory(client, namespace) -> a registry."""
    __tracebackhide__ = True
    return check(factory, target, kind="registry", **options)


def check_single_flight(
    factory: Callable[..., Any] | str, target: Target | None = None, **options: Unpack[CheckKwargs]
) -> list[ResultRow]:
    """`check(factory, target, kind="single-flight", ...)`: factory(client, key, ttl_ms)."""
    __tracebackhide__ = True
    return check(factory, target, kind="single_flight", **options)


def check_transaction(
    factory: Callable[..., Any] | str, target: Target | None = None, **options: Unpack[CheckKwargs]
) -> list[ResultRow]:
    """`check(factory, target, kind="transaction", ...)`: factory(client, namespace) -> a bank with
    open(account, balance), transfer(src, dst, amount) -> bool and balances(accounts)."""
    __tracebackhide__ = True
    return check(factory, target, kind="transaction", **options)


def check_queue(
    factory: Callable[..., Any] | str, target: Target | None = None, **options: Unpack[CheckKwargs]
) -> list[ResultRow]:
    """`check(factory, target, kind="queue", ...)`: factory(client, name) -> a queue with
    put(item) -> id, take(timeout) -> (id, item) | None and ack(id), its lease in `lease_ms`."""
    __tracebackhide__ = True
    return check(factory, target, kind="queue", **options)


def check_operations(
    factory: Callable[..., Any] | str, target: Target | None = None, **options: Unpack[CheckKwargs]
) -> list[ResultRow]:
    """`check(factory, target, kind="operations", ...)`: your own primitive, factory(client,
    namespace) with the methods `operations` names ({name: strategy of the argument tuple};
    default OPERATIONS beside the factory), judged against `model` (a class with the same
    methods) or, without one, against itself run one operation at a time on a fresh namespace."""
    __tracebackhide__ = True
    return check(factory, target, kind="operations", **options)


def check_rate_limiter(
    factory: Callable[..., Any] | str, target: Target | None = None, **options: Unpack[CheckKwargs]
) -> list[ResultRow]:
    """`check(factory, target, kind="rate-limiter", ...)`: factory(client, key, limit, window_ms) ->
    a limiter with hit(cost=1) -> bool. It is held to a fixed window unless told otherwise:
    `claim=["token-bucket"], no_claim=["fixed-window"]` for a token bucket or GCRA."""
    __tracebackhide__ = True
    return check(factory, target, kind="rate_limiter", **options)


def report(rows: Sequence[ResultRow], noise: str = "", *, replay_call: str = "") -> str:
    """What a failed `check` says: the verdict and each check's status, the claims, and the
    evidence lines `contend check` prints. A replay command naming a factory that cannot be
    imported by name becomes the `replay_call` of this API (a `{replay}` placeholder)."""
    lines = []
    for row in rows:
        cells = " · ".join(f"{r.check} {r.kind or r.status}" for r in row.results) or "no check ran"
        family = family_label(row.subject.family)  # as the command line spells it
        lines.append(f"contend check · {family} · {row.subject.name}: {row.verdict} ({cells})")
        importable = _imports_back(row.subject.factory, row.subject.name)
        evidence = evidence_lines([row])
        if not importable and replay_call:
            evidence = [_api_replay(line, replay_call) for line in evidence]
        lines += claims_lines([row])
        if evidence:
            lines.append("evidence")
            lines += [f"  {line}" for line in evidence]
        if (row.inconclusive or not row.results) and not row.failed:
            lines.append("inconclusive: raise check_seconds, or pass allow_inconclusive=True")
    if noise:
        lines.append(noise)
    return "\n".join(lines)


def machine_for(
    factory: Callable[..., Any], kind: str, *, claims: Sequence[str] | None = None
) -> type[ScheduledMachine]:
    """The family's state machine pointed at `factory`: a LockMachine (a semaphore's has two
    slots), RegistryMachine, SingleFlightMachine, TransactionMachine or QueueMachine subclass. `claims` defaults to what
    `contend check --impl` claims for the kind (add "fencing" for a lock with a token)."""
    kind = _kind(kind)
    _validate(factory, kind, (), (), (), None)
    chosen = frozenset(DEFAULT_CLAIMS[kind] if claims is None else claims)
    if unknown := sorted(chosen - catalog.properties_of(kind)):
        raise ValueError(
            f"claims {unknown}: a {kind} can claim {', '.join(sorted(catalog.properties_of(kind)))}"
        )
    name = factory_name(factory).replace("<", "").replace(">", "")
    return family_machine(SimpleNamespace(name=name, family=kind, factory=factory, claims=chosen))


def run_machine(
    machine: type[ScheduledMachine],
    target: Target,
    *,
    examples: int = 50,
    shrink: bool = True,
    derandomize: bool = True,
    settings: hypothesis_settings | None = None,
) -> None:
    """Run a scheduled state machine for `examples` Hypothesis examples on `target`.

    By default the seed is fixed and no example database is used, as in `contend check`;
    `derandomize=False` draws fresh seeds. `settings` (e.g. `machine_settings(n,
    parent=settings.default)` to follow the loaded profile) replaces all of that. A broken
    property raises `contend.machines.PropertyViolated` (an AssertionError); Hypothesis
    prints the shrunk interleaving and a `@reproduce_failure` blob with it.
    """
    if not (isinstance(machine, type) and issubclass(machine, ScheduledMachine)):
        raise TypeError(
            f"{machine!r} is not a scheduled state machine class: subclass contend.machines.LockMachine, "
            "RegistryMachine or SingleFlightMachine (or use contend.testing.machine_for)"
        )
    if getattr(machine, "factory", None) is None:
        raise TypeError(f"{machine.__name__}.factory is not set: add `factory = staticmethod(make)`")
    __tracebackhide__ = True
    chosen = settings or machine_settings(examples, shrink=shrink, derandomize=derandomize)
    run_state_machine_as_test(lambda: machine(target), settings=chosen)  # type: ignore[arg-type]


def _kind(kind: str) -> str:
    """The family as the catalog names it: the command line's spelling (single-flight) is accepted."""
    return kind.replace("-", "_") if isinstance(kind, str) else kind


def _validate(
    factory: object,
    kind: str,
    claim: Sequence[str],
    no_claim: Sequence[str],
    checks: Sequence[str],
    replay: str | None,
) -> None:
    """ValueError or TypeError for arguments no check could run with."""
    if kind not in BATTERIES:
        raise ValueError(f"kind={kind!r}: contend checks one of {', '.join(KINDS)}")
    if not isinstance(factory, str) and not callable(factory):
        raise TypeError(
            f"the factory must be callable (or 'package.module:factory'); got a {type(factory).__name__}: "
            f"{factory!r}. A {kind} factory is called as {protocol(kind)[0]}"
        )
    for option, names in (("claim", claim), ("no_claim", no_claim)):
        if isinstance(names, str):
            raise TypeError(f"{option}={names!r}: give a list of property names, e.g. [{names!r}]")
        known = catalog.properties_of(kind)
        if unknown := [n for n in names if n not in known]:
            raise ValueError(f"{option}={unknown}: a {kind} can claim {', '.join(sorted(known))}")
    if isinstance(checks, str):
        raise TypeError(f"checks={checks!r}: give a list of check names, e.g. [{checks!r}]")
    family_checks = [c.name for c in BATTERIES[kind]]
    if unknown := [c for c in checks if c not in family_checks]:
        raise ValueError(f"checks={unknown}: the {kind} checks are {', '.join(family_checks)}")
    if replay is not None:
        parse_replay(replay)


@contextlib.contextmanager
def _server(target: Target | None, spec: SubjectSpec) -> Iterator[Target]:
    """`target` (its clients resending as the spec says), or embedded servers for the call."""
    if target is not None:
        retries = spec.client_retries
        yield dataclasses.replace(target, client_retries=retries) if retries else target
        return
    with open_target(masters=spec.masters, client_retries=spec.client_retries) as started:
        yield started


def _imports_back(factory: Callable[..., Any], name: str) -> bool:
    """Does `--impl NAME` import this very factory (so the command's replay line works)?"""
    module_name, _, attr = name.partition(":")
    obj: Any = sys.modules.get(module_name)
    if obj is None or module_name == "__main__" or "<" in attr:
        return False
    for part in attr.split("."):
        obj = getattr(obj, part, None)
    return obj is factory


_REPLAY = re.compile(r"replay: \S.* --replay (\S+)$", re.MULTILINE)


def _api_replay(line: str, call: str) -> str:
    """A replay command for a factory `contend check` cannot import, as a call of this API."""
    return _REPLAY.sub(lambda m: "replay: " + call.format(replay=repr(m.group(1))), line)


def _call_text(
    factory: Callable[..., Any] | str,
    kind: str,
    claim: Sequence[str],
    no_claim: Sequence[str],
    *,
    operations: Any = None,
    model: Any = None,
) -> str:
    """`check_lock(<factory>, target, replay={replay})`, with the claims it was given (and the
    operation list and model of kind operations)."""
    extra = "".join(
        f", {name}={list(values)!r}" for name, values in (("claim", claim), ("no_claim", no_claim)) if values
    )
    for name, given in (("operations", operations), ("model", model)):
        if given is not None:
            extra += f", {name}={given!r}" if isinstance(given, str) else f", {name}={_label(given)}"
    label = factory if isinstance(factory, str) else _label(factory, "factory")
    return f"check_{kind}({label}, target{extra}, replay={{replay}})"


def _label(obj: Any, otherwise: str = "...") -> str:
    """How a call names an object it was given: its __name__, else `otherwise`."""
    return str(getattr(obj, "__name__", otherwise))
