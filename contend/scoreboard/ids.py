"""The scoreboard's battery for ID generators: a counter many clients draw from, no names.

The registry family's protocol is a table of names (register, lookup, reverse, count; ids
1..n), which an ID generator such as pottery's NextID does not offer or claim ("there may be
holes in the sequence"). What it does claim is judged here, on its own protocol:
`factory(client, key)` returns an object whose `next()` hands out an int. Unique ids: no two
draws, by any clients, ever get the same id; and ids increase: a draw that starts after
another one returned gets a larger id (so one client's ids increase too). No spurious errors,
when claimed: with every server up, a draw hands out an id rather than raising.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable
from typing import Any

from contend.check.burst import burst
from contend.check.framework import Check, CheckContext, CheckFailed, CheckOptions, CheckResult, run_check
from contend.impl.catalog import NO_SPURIOUS_ERRORS, UNIQUE_IDS
from contend.servers.keyspace import Namespace
from contend.servers.target import Target

#: The property each check is about (a passing result names none).
CHECK_PROPS: dict[str, str] = {}
#: Draws per client in a burst, and clients at once.
DRAWS = 50
CLIENTS = 8


def _draws(gen: Any, n: int, seen: list[tuple[float, float, int]], lock: threading.Lock) -> int:
    """`n` draws, each recorded with when it started and returned; the errors it raised, counted."""
    errors = 0
    for _ in range(n):
        began = time.monotonic()
        try:
            ident = gen.next()
        except Exception:  # a draw that gives up (documented: NextID's QuorumNotAchieved) hands out nothing
            errors += 1
            continue
        with lock:
            seen.append((began, time.monotonic(), ident))
    return errors


def unique_check(ctx: CheckContext) -> str:
    """Clients released together, each drawing ids: every id handed out once."""
    clients = min(CLIENTS, ctx.options.burst_clients)
    gens = [ctx.factory(ctx.client(), ctx.namespace.key("ids")) for _ in range(clients)]
    seen: list[tuple[float, float, int]] = []
    lock = threading.Lock()
    outcomes = burst([functools.partial(_draws, g, DRAWS, seen, lock) for g in gens], timeout=120)
    gave_up = sum(o.value or 0 for o in outcomes if o.ok)
    if failed := [o.error for o in outcomes if not o.ok]:
        raise CheckFailed(f"a draw raised outside the library's own retries: {failed[0]!r}")
    ids = [ident for _, _, ident in seen]
    dupes = sorted({i for i in ids if ids.count(i) > 1})
    if dupes:
        raise CheckFailed(f"{clients} clients × {DRAWS} draws at once: ids {dupes[:5]} handed out twice")
    late = [
        (a, b)
        for a in seen
        for b in seen
        if b[0] > a[1] and b[2] <= a[2]  # b started after a returned, yet got no larger id
    ]
    if late:
        (_, _, first), (_, _, second) = late[0]
        raise CheckFailed(f"a draw that started after {first} was handed out got {second}")
    if gave_up and NO_SPURIOUS_ERRORS in ctx.subject.claims:
        raise CheckFailed(
            f"{clients} clients × {DRAWS} draws at once on a server that never failed: {gave_up} draw(s) "
            f"raised instead of handing out an id (the {len(ids)} handed out were distinct and increasing)",
            prop=NO_SPURIOUS_ERRORS,
        )
    return f"{clients} clients × {DRAWS} draws at once: {len(ids)} distinct ids, increasing in time"


ID_CHECKS = [Check("burst", "8 clients drawing ids at once", unique_check, UNIQUE_IDS)]
CHECK_PROPS.update({c.name: c.prop for c in ID_CHECKS})


def run_id_checks(
    target: Target,
    factory: Callable[..., Any],
    options: CheckOptions,
    namespace: Namespace,
    subject: Any,
    on_result: Callable[[Any, CheckResult], None],
    stop: threading.Event | None,
) -> list[CheckResult]:
    """Every check of the battery, each in a fresh namespace cleaned after it."""
    results = []
    for check in ID_CHECKS:
        ns = Namespace(
            namespace.client, namespace.child(subject.name, check.name), other_urls=namespace.other_urls
        )
        ctx = CheckContext(target, ns, factory, options, (), subject)
        try:
            result = run_check(check, ctx, stop)
        finally:
            ns.cleanup()
        results.append(result)
        on_result(subject, result)
    return results
