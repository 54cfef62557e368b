"""The transaction battery: the bank model, a burst on one hot pair, and bad input.

A bank (`factory(client, namespace)`, the protocol of docs/protocol.md) opens
accounts with `open(account, balance)`, moves money with
`transfer(src, dst, amount) -> bool` and reads with `balances(accounts)`.
The state machine (`schedule`) judges isolation from the order the server ran
the round trips; these checks judge what a run leaves behind. Each is written
once for synchronous banks and for `redis.asyncio` ones (coroutine methods): a
`Crowd` (contend.check.burst) holds clients of the kind the bank takes, and
runs its calls to their end, or releases them together.
"""

from __future__ import annotations

import contextlib
import functools
import random
from collections.abc import Callable
from typing import Any

from contend.check.burst import Called, Crowd, awaited, crowd, errors_summary, to_the_end
from contend.check.framework import Check, CheckContext, CheckFailed, expect
from contend.impl.catalog import APPLIES_ONCE, BAD_INPUT, CONSISTENT_AUDIT
from contend.machines.transactions import open_record, server_table
from contend.models.bank import BankModel, Move, explain_audit, explain_final
from contend.servers.record import ServerRecord, between

ACCOUNTS = ("a", "b", "c")
OPENING = 100


def bank(ctx: CheckContext, people: Crowd, client: Any, opening: int | None = OPENING) -> Any:
    """A bank object on `client` (one of the crowd's), in the check's namespace, its methods called
    to their end; opening the accounts first (unless `opening` is None)."""
    made = Called(ctx.factory(client, ctx.namespace.prefix), people)
    if opening is not None:
        with expect("opening the accounts"):
            for account in ACCOUNTS:
                made.open(account, opening)
    return made


def _balances(obj: Any, what: str) -> dict[str, int]:
    with expect(f"{what}: balances({list(ACCOUNTS)})"):
        got = obj.balances(list(ACCOUNTS))
    return {str(k): int(v) for k, v in dict(got).items()}


def model_check(ctx: CheckContext) -> str:
    """Random sequential transfers (some overdrawing) and audits, each compared with models.bank."""
    rng = random.Random(ctx.options.seed)
    model = BankModel(dict.fromkeys(ACCOUNTS, OPENING))
    state = model.init()
    with crowd(ctx, 1) as people:
        return _model_run(ctx, model, state, rng, bank(ctx, people, people.clients[0]))


def _model_run(ctx: CheckContext, model: BankModel, state: Any, rng: random.Random, obj: Any) -> str:
    value: Any
    for step in range(ctx.options.model_ops):
        if rng.random() < 0.2:
            f, value = "balances", ACCOUNTS
            got: Any = tuple(_balances(obj, f"op {step}").values())
        else:
            src, dst = rng.sample(ACCOUNTS, 2)
            f, value = "transfer", (src, dst, rng.choice((1, 7, 40, 150)))
            with expect(f"op {step}: transfer{value}", prop=APPLIES_ONCE):
                got = bool(obj.transfer(*value))
        expected, state = model.apply(state, f, value)
        if got != expected:
            raise CheckFailed(
                f"op {step}: {f}{value!r} returned {got!r}; the model says {expected!r} "
                f"(state {model.describe_state(state)})",
                prop=APPLIES_ONCE,
            )
    return f"{ctx.options.model_ops} random transfers and audits agree with the model"


def burst_check(ctx: CheckContext) -> str:
    """Clients released together, each moving money around the hot accounts and auditing them:
    every audit sees the opening total, and the end state is each transfer applied once."""
    k, rounds = ctx.options.burst_clients, ctx.options.burst_names_per_client
    opening = dict.fromkeys(ACCOUNTS, OPENING)

    async def work(i: int, obj: Any) -> tuple[list[Move], list[Move], list[dict[str, int]]]:
        rng = random.Random(i)
        moved: list[Move] = []
        gave_up: list[Move] = []  # raised (bounded retries spent, say): applied once or not at all
        audits = []
        for r in range(rounds):
            src, dst = rng.sample(ACCOUNTS, 2)
            move = (src, dst, rng.randint(1, 30))
            try:
                if await awaited(obj.transfer(*move)):
                    moved.append(move)
            except Exception:
                gave_up.append(move)
            if r % 4 == 0:
                with contextlib.suppress(Exception):  # an audit that gives up says nothing
                    seen = await awaited(obj.balances(list(ACCOUNTS)))
                    audits.append({str(a): int(b) for a, b in dict(seen).items()})
        return moved, gave_up, audits

    with crowd(ctx, k + 1) as people:
        opener = bank(ctx, people, people.clients[0])
        banks = [ctx.factory(client, ctx.namespace.prefix) for client in people.clients[1:]]
        if people.asynchronous:  # tasks on the crowd's loop
            calls = [functools.partial(work, i, obj) for i, obj in enumerate(banks)]
        else:  # threads, each running its work to the end (a synchronous bank never awaits)
            calls = [functools.partial(to_the_end, work, i, obj) for i, obj in enumerate(banks)]
        outcomes = people.at_once(calls)
        final = _balances(opener, f"burst of {k} {people.who}")
    what = f"burst of {k} {people.who} × {rounds} transfers on {len(ACCOUNTS)} accounts"
    if failed := errors_summary(outcomes):
        raise CheckFailed(f"{what}: {failed}", prop=APPLIES_ONCE)
    done = [m for o in outcomes for m in o.value[0]]
    maybe = [m for o in outcomes for m in o.value[1]]
    for audit in (a for o in outcomes for a in o.value[2]):
        if problem := explain_audit(opening, audit):
            raise CheckFailed(f"{what}: {problem}", prop=CONSISTENT_AUDIT)
    if problem := explain_final(opening, done, maybe, final):
        raise CheckFailed(f"{what}: {problem}", prop=APPLIES_ONCE)
    if maybe:
        return f"{what}: {len(done)} moved, {len(maybe)} gave up (raised); every audit and the end state consistent"
    return f"{what}: {len(done)} moved, every audit and the end state consistent"


def _snapshot(ctx: CheckContext) -> dict[bytes, Any]:
    """Every key of the check's namespace (whatever separator the bank joins to it) and its value."""
    client, ns = ctx.namespace.client, ctx.namespace
    return {k: client.dump(k) for k in sorted(client.scan_iter(ns.pattern, count=1000)) if ns.owns(k)}


def _writes(ctx: CheckContext, record: ServerRecord | None, call: Callable[[], Any]) -> tuple[Any, list[str]]:
    """Run `call`: what it raised (None if it returned), and the keys it left changed: the
    namespace's (whatever separator the bank joins to it), and any other the server's record shows
    it wrote that exists afterwards. A key written and put back (a lock taken and released) is no
    change."""
    error: BaseException | None = None
    before = _snapshot(ctx)
    begin = record.mark("call") if record is not None else ""
    try:
        call()
    except Exception as exc:
        error = exc
    after = _snapshot(ctx)
    changed = [k.decode(errors="replace") for k in sorted({*before, *after}) if before.get(k) != after.get(k)]
    if record is not None:
        end = record.mark("called")
        table = server_table(ctx.target)
        for ran in between(record.read_through(end), begin, end):
            placed = table.place(ran.args, script_shown=record.shows_scripts and not ran.by_script)
            for access in placed.accesses:
                elsewhere = access.writes and not ctx.namespace.owns(access.key)
                if elsewhere and access.key not in changed and ctx.namespace.client.exists(access.key):
                    changed.append(access.key)
    return error, changed


def bad_input_check(ctx: CheckContext) -> str:
    """An amount <= 0, an unknown account and a transfer to the same account raise (any exception)
    and leave nothing changed: no key of the namespace, nor any other the server's record (where
    contend started the server) shows them writing."""
    with crowd(ctx, 1) as people:
        return _bad_inputs(ctx, bank(ctx, people, people.clients[0]))


def _bad_inputs(ctx: CheckContext, obj: Any) -> str:
    calls: list[tuple[str, Callable[[], Any]]] = [
        ("transfer('a', 'b', 0)", lambda: obj.transfer("a", "b", 0)),
        ("transfer('a', 'b', -5)", lambda: obj.transfer("a", "b", -5)),
        ("transfer('a', 'nobody', 5)", lambda: obj.transfer("a", "nobody", 5)),
        ("transfer('nobody', 'a', 5)", lambda: obj.transfer("nobody", "a", 5)),
        ("transfer('a', 'a', 5)", lambda: obj.transfer("a", "a", 5)),
    ]
    raised = set()
    record = open_record(ctx.target)
    try:
        for what, call in calls:
            error, wrote = _writes(ctx, record, call)
            if error is None:
                raise CheckFailed(
                    f"{what} was accepted; the protocol says it must raise before writing anything"
                )
            if wrote:
                raise CheckFailed(
                    f"{what} raised {type(error).__name__} but changed {', '.join(wrote[:4])}"
                ) from error
            raised.add(type(error).__name__)
    finally:
        if record is not None:
            record.close()
    return f"{len(calls)} bad inputs refused ({', '.join(sorted(raised))}), nothing written"


TRANSACTION_CHECKS = [
    Check("model", "random sequential transfers and audits against models.bank", model_check, APPLIES_ONCE),
    Check("burst", "16 clients at once on three accounts, auditing as they go", burst_check, APPLIES_ONCE),
    Check("bad-input", "amount <= 0, unknown account, same account: refused, nothing written",
          bad_input_check, BAD_INPUT),
]  # fmt: skip
