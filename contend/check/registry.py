"""The registry battery: the model, seed 000's serial test, bursts, bad input."""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Callable
from typing import Any

from contend.check.bad_input import REGISTRY_BAD_INPUT
from contend.check.burst import burst, crowd, errors_summary
from contend.check.framework import Check, CheckContext, CheckFailed, expect
from contend.impl.catalog import GAP_FREE, NO_SPURIOUS_ERRORS, STABLE_IDS, TABLES_AGREE, UNIQUE_IDS
from contend.models.registry import RegistryModel


def _registry(ctx: CheckContext) -> Any:
    """A new registry object on its own connection; all share the check's namespace."""
    return ctx.factory(ctx.client(), ctx.namespace.prefix)


def check_tables(
    reg: Any,
    expected: dict[str, int],
    what: str,
    reads: int = 1000,
    call: Callable[[Callable[[], Any]], Any] = lambda read: read(),
) -> None:
    """Ids are 1..n; lookup, reverse and count agree with what registration returned.

    Ids are checked for every name; the tables are read back for every name up
    to `reads` names, else for an even sample of `reads` of them (the seed reads
    back every 50th). `call` runs each read (an async registry's: awaited, `Crowd.call`).
    """
    n = len(expected)
    ids = sorted(expected.values())
    if ids != list(range(1, n + 1)):
        dupes = sorted({a for a, b in itertools.pairwise(ids) if a == b})[:5]
        gaps = sorted(set(range(1, max(ids, default=0) + 1)) - set(ids))[:5]
        raise CheckFailed(
            f"{what}: {n} names got ids up to {max(ids, default=0)}, not 1..{n}"
            + (f"; duplicated ids {dupes}" if dupes else "")
            + (f"; gaps at {gaps}" if gaps else ""),
            prop=UNIQUE_IDS if dupes else GAP_FREE,
        )
    items = list(expected.items())
    sample = items[:: max(1, n // reads)]
    with expect(f"{what}: reading the tables back"):
        for name, ident in sample:
            if (found := call(functools.partial(reg.lookup, name))) != ident:
                raise CheckFailed(
                    f"{what}: lookup({name!r}) = {found}, registration returned {ident}", prop=TABLES_AGREE
                )
            if (back := call(functools.partial(reg.reverse, ident))) != name:
                raise CheckFailed(
                    f"{what}: reverse({ident}) = {back!r}, expected {name!r}", prop=TABLES_AGREE
                )
        if (after := call(functools.partial(reg.reverse, n + 1))) is not None:
            raise CheckFailed(
                f"{what}: reverse({n + 1}) = {after!r} although only {n} names exist", prop=TABLES_AGREE
            )
        if (count := call(reg.count)) != n:
            raise CheckFailed(f"{what}: count() = {count}, expected {n}", prop=TABLES_AGREE)


def model_check(ctx: CheckContext) -> str:
    """Random sequential operations, each compared with models.registry."""
    rng = random.Random(ctx.options.seed)
    model = RegistryModel()
    state = model.init()
    reg = _registry(ctx)
    pool = [f"user-{i}" for i in range(10)] + ["名前", "a b", "x" * 300]
    many = bool(ctx.subject.capabilities and ctx.subject.capabilities.register_many)
    for step in range(ctx.options.model_ops):
        if step % 50 == 0:
            ctx.note(f"model: operation {step} of {ctx.options.model_ops}")
        roll = rng.random()
        value: Any
        if roll < 0.4 or (roll < 0.5 and not many):
            f, value = "register", rng.choice(pool)
        elif roll < 0.5:
            f, value = "register_many", tuple(rng.choice(pool) for _ in range(rng.randint(0, 4)))
        elif roll < 0.7:
            f, value = "lookup", rng.choice(pool)
        elif roll < 0.85:
            f, value = "reverse", rng.randint(0, len(state) + 2)
        else:
            f, value = "count", None
        with expect(f"op {step}: {f}({value!r})"):
            got = getattr(reg, f)(
                *(() if value is None else (list(value) if f == "register_many" else value,))
            )
        if f == "register_many":
            got = tuple(got)
        expected, state = model.apply(state, f, value)
        if got != expected:
            raise CheckFailed(
                f"op {step}: {f}({value!r}) returned {got!r}; the model says {expected!r} "
                f"(state {model.describe_state(state)})"
            )
    return f"{ctx.options.model_ops} random operations agree with the model"


def serial_check(ctx: CheckContext) -> str:
    """Seed 000's test_register_serial: n names, then the first 10 again."""
    n = ctx.options.serial_names
    reg = _registry(ctx)
    names = [f"user-{i:04d}" for i in range(n)]
    with expect("serial registration"):
        ids = {name: reg.register(name) for name in names}
        again = [reg.register(name) for name in names[:10]]
    if again != [ids[name] for name in names[:10]]:
        raise CheckFailed(f"registering the first 10 names again gave {again}", prop=STABLE_IDS)
    for position, name in enumerate(names, start=1):
        if ids[name] != position:
            raise CheckFailed(
                f"serial: {name!r}, registered as number {position}, got id {ids[name]}", prop=GAP_FREE
            )
    check_tables(reg, ids, "serial")
    return f"{n} names registered one by one got ids 1..{n}"


def burst_distinct_check(ctx: CheckContext) -> str:
    """Clients released together, each registering its own names: distinct, gap-free ids."""
    k, m = ctx.options.burst_clients, ctx.options.burst_names_per_client
    regs = [_registry(ctx) for _ in range(k)]

    def client_work(i: int, reg: Any) -> dict[str, int]:
        return {f"c{i}-n{j}": reg.register(f"c{i}-n{j}") for j in range(m)}

    outcomes = burst([functools.partial(client_work, i, reg) for i, reg in enumerate(regs)])
    if failed := errors_summary(outcomes):
        raise CheckFailed(f"burst of {k} clients × {m} distinct names: {failed}", prop=NO_SPURIOUS_ERRORS)
    ids: dict[str, int] = {}
    for outcome in outcomes:
        ids.update(outcome.value)
    check_tables(regs[0], ids, f"burst of {k} clients × {m} distinct names")
    return f"{k} clients × {m} distinct names at once: ids 1..{k * m}, tables agree"


def burst_one_name_check(ctx: CheckContext) -> str:
    """Clients released together on one fresh name, round after round: one id each, no errors.
    For async code the clients are tasks on one loop (contend.check.burst.Crowd)."""
    k, rounds = ctx.options.burst_clients, ctx.options.burst_rounds
    ids: dict[str, int] = {}
    with crowd(ctx, k) as together:
        regs = [ctx.factory(client, ctx.namespace.prefix) for client in together.clients]
        for r in range(rounds):
            name = f"hot-{r}"
            outcomes = together.at_once([functools.partial(reg.register, name) for reg in regs])
            what = f"round {r + 1}: {k} {together.who} registering {name!r}"
            if failed := errors_summary(outcomes):
                raise CheckFailed(f"{what} at once: {failed}", prop=NO_SPURIOUS_ERRORS)
            got = {o.value for o in outcomes}
            if len(got) != 1:
                raise CheckFailed(f"{what} got ids {sorted(got)}", prop=STABLE_IDS)
            ids[name] = got.pop()
        check_tables(regs[0], ids, f"{rounds} rounds of {k} {together.who} on one name", call=together.call)
        if together.asynchronous:
            return f"{rounds} rounds × {k} tasks on one name (asyncio.gather, pre-connected clients): one id each, ids 1..{rounds}"
    return f"{rounds} rounds × {k} clients on one name: one id each, ids 1..{rounds}"


CHECKS = [
    Check("model", "random sequential operations against models.registry", model_check, STABLE_IDS),
    Check("serial", "seed 000's serial test: n names one by one, then 10 again", serial_check, GAP_FREE),
    Check("burst-distinct", "16 clients at once, distinct names", burst_distinct_check, UNIQUE_IDS),
    Check("burst-one-name", "16 clients at once on one name, 20 rounds", burst_one_name_check, STABLE_IDS),
    REGISTRY_BAD_INPUT,
]

#: The burst on one name as async code meets it: the same check (burst_one_name_check), on tasks.
ASYNC_BURST_ONE_NAME = Check(
    "burst-one-name",
    "tasks on pre-connected clients register one name together (asyncio.gather): one id",
    burst_one_name_check,
    STABLE_IDS,
)
