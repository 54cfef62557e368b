"""The code under test as a command (or a caller of `contend.testing`) names it: `--impl
MODULE:FACTORY --kind K` with its claims, masters, cluster and client retries, parsed once and
held to every rule that needs neither an import nor a server. The rules are written here, one
message each; `contend.subject.resolve` turns a spec into the row that runs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from contend.subject.claims import check_claim_names
from contend.subject.loader import factory_name
from contend.subject.multi_master import check_masters
from contend.subject.protocols import PROTOCOLS, ProtocolError
from contend.values import FAMILY_CHOICES


@dataclass(frozen=True)
class Scope:
    """What a command runs of the code under test: the kinds, and how it words them."""

    #: How `--impl needs --kind` lists the kinds ("registry or lock").
    named: str
    #: The kinds it runs (empty: every kind with a protocol; the loader refuses the others).
    kinds: tuple[str, ...] = ()
    #: The refusal of a kind it does not run: str.format with spec, kind (as given), label and
    #: what ("a queue"; "your own primitive" for operations).
    other_kind: str = ""
    #: The refusal of a kind no protocol has ("": `other_kind` as well).
    unknown_kind: str = ""


@dataclass(frozen=True)
class SubjectSpec:
    """The code under test, parsed: nothing imported yet, no server touched."""

    #: `package.module:factory`, or the factory itself.
    factory: str | Callable[..., Any]
    #: The protocol it follows: a key of contend.subject.protocols.PROTOCOLS.
    kind: str
    claim: tuple[str, ...] = ()
    no_claim: tuple[str, ...] = ()
    #: The independent masters a lock spans (0: one server); its factory then takes their clients.
    masters: int = 0
    #: The masters of the embedded Redis Cluster it runs on (None: not a cluster).
    cluster: int | None = None
    #: How many times the clients handed to it resend a command (--client-retries).
    client_retries: int = 0
    #: --kind operations: the operation list and the model (`--operations`, `--model`: a
    #: MODULE:ATTR or the object; None: the OPERATIONS and MODEL beside the factory).
    operations: Any = None
    model: Any = None

    @property
    def name(self) -> str:
        """How the table, the evidence and the replay line name it: `package.module:factory`."""
        return factory_name(self.factory)


def require_kind(impl: object, kind: str | None, kinds: str) -> None:
    """`--impl` needs `--kind` (a lock factory and a registry factory cannot be told apart), and
    `--kind` goes with `--impl`. `kinds` says which the command runs; ProtocolError (exit 2) says
    what to add."""
    if impl and not kind:
        raise ProtocolError(f"--impl {impl} needs --kind: the protocol it follows ({kinds})")
    if kind and not impl:
        raise ProtocolError(
            f"--kind {kind.replace('_', '-')} names the protocol of --impl; give --impl MODULE:FACTORY too"
        )


def parse_spec(
    impl: str | Callable[..., Any] | None,
    kind: str | None,
    scope: Scope,
    *,
    claim: Sequence[str] = (),
    no_claim: Sequence[str] = (),
    masters: int | None = None,
    cluster: int | None = None,
    client_retries: int = 0,
    redis_urls: Sequence[str] = (),
    starts_masters: bool = False,
    operations: Any = None,
    model: Any = None,
) -> SubjectSpec | None:
    """The spec of `--impl`/`--kind` and what goes with them, or None when neither is given;
    ProtocolError or ContendError (exit 2, one line) for a rule it breaks. Nothing is imported.

    `masters` (None: not asked) is held to `check_masters`, with the --redis-url given
    (`redis_urls`: none or one per master; none at all when the command `starts_masters`)."""
    require_kind(impl, kind, scope.named)
    if not impl:
        return None
    given = str(kind).strip()
    family = given.replace("-", "_")
    if scope.kinds and family not in scope.kinds:
        spec_text = impl if isinstance(impl, str) else factory_name(impl)
        template = scope.other_kind if family in PROTOCOLS or not scope.unknown_kind else scope.unknown_kind
        label = family.replace("_", "-")
        what = "your own primitive" if family == "operations" else f"a {label}"  # not "a operations"
        raise ProtocolError(template.format(spec=spec_text, kind=given, label=label, what=what))
    if (operations is not None or model is not None) and family != "operations":
        option = "--operations" if operations is not None else "--model"
        raise ProtocolError(
            f"{option} goes with --kind operations (your own primitive), not --kind {given.replace('_', '-')}"
        )
    check_claim_names(family, claim, "--claim")
    check_claim_names(family, no_claim, "--no-claim")
    if masters is not None:
        check_masters(masters, kind=family, cluster=cluster, urls=redis_urls, started_here=starts_masters)
    return SubjectSpec(
        impl,
        family,
        tuple(claim),
        tuple(no_claim),
        masters or 0,
        cluster,
        client_retries,
        operations,
        model,
    )


#: What `contend check` and `contend.testing` run: every kind with a protocol.
EVERY_KIND = Scope(named=FAMILY_CHOICES)
