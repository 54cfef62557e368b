"""What the code under test is held to: the properties each kind claims unless told otherwise.

The property names and what each catalog implementation claims live in `contend.impl.catalog`;
these are the defaults for code contend did not write (`contend check --impl`, `contend.testing`,
the state machines' subclasses, the scoreboard's rows), written once.
"""

from __future__ import annotations

from collections.abc import Iterable

from contend.impl import catalog
from contend.subject.protocols import ProtocolError
from contend.values import family_label

#: A lock's or semaphore's defaults: one holder, a release that frees only its own lease, a dead
#: holder's lease running out, leases kept by the server's clock (plus fencing once it has a token).
LOCK_CLAIMS = catalog.LEASE_CLAIMS
#: A semaphore's defaults; add FIFO for a fair one.
SEMAPHORE_CLAIMS = catalog.LEASE_CLAIMS
REGISTRY_CLAIMS = catalog.REGISTRY_PROPERTIES
SINGLE_FLIGHT_CLAIMS = catalog.SINGLE_FLIGHT_PROPERTIES
TRANSACTION_CLAIMS = catalog.TRANSACTION_PROPERTIES
#: A queue's defaults; add FIFO for one that hands items out in the order they were put.
QUEUE_CLAIMS = catalog.QUEUE_PROPERTIES - {catalog.FIFO}
#: A rate limiter's defaults: a fixed window. A sliding log adds sliding-log; a token bucket or
#: GCRA claims token-bucket instead (--claim token-bucket --no-claim fixed-window).
RATE_LIMITER_CLAIMS = frozenset(
    {catalog.FIXED_WINDOW, catalog.NO_STUCK_KEY, catalog.NO_FALSE_REFUSAL, catalog.CLOCK_SKEW_SAFE}
)

#: What a user's implementation is taken to claim, per kind (fencing: when it has a token).
DEFAULT_CLAIMS: dict[str, frozenset[str]] = {
    "registry": REGISTRY_CLAIMS,
    "lock": LOCK_CLAIMS,
    "semaphore": SEMAPHORE_CLAIMS,
    "single_flight": SINGLE_FLIGHT_CLAIMS,
    "transaction": TRANSACTION_CLAIMS,
    "queue": QUEUE_CLAIMS,
    "operations": catalog.OPERATIONS_PROPERTIES,
    "rate_limiter": RATE_LIMITER_CLAIMS,
}


def check_claim_names(kind: str, names: Iterable[str], option: str) -> None:
    """ProtocolError (exit 2) for a --claim/--no-claim a `kind` cannot make."""
    known = catalog.properties_of(kind)
    for name in names:
        if name not in known:
            raise ProtocolError(
                f"{option} {name!r}: a {family_label(kind)} can claim {', '.join(sorted(known))}"
            )
