"""The `schedule` check: the family's state machine, with Hypothesis choosing the interleaving.

Correct implementations get `schedule_examples` examples with no property
broken. Known-bad ones are searched for up to `hunt_examples` examples, and the
first failure is shrunk (unless `shrink` is off) to the fewest clients and
round trips; the check's evidence is the property that broke, that
interleaving round trip by round trip, and a `contend check ... --replay`
command that runs exactly that example again. The seed is fixed
(derandomized), so the verdict is the same on every run of the same code.
"""

from __future__ import annotations

import re
import shlex
import time
from collections import Counter
from typing import Any

import hypothesis
from hypothesis.core import decode_failure
from hypothesis.errors import DidNotReproduce, Flaky, FlakyStrategyDefinition, InvalidArgument
from hypothesis.stateful import run_state_machine_as_test

from contend.check.framework import (
    NOT_JUDGED,
    Check,
    CheckContext,
    CheckFailed,
    CheckInconclusive,
    CheckOptions,
    InputRefused,
)
from contend.history.access import UnknownCommand
from contend.impl.catalog import PROGRESS, SERIALIZABLE
from contend.machines.base import PropertyViolated, ScheduledMachine
from contend.machines.family import family_machine
from contend.machines.settings import machine_settings, shrink_budget
from contend.schedule.scheduler import SchedulerError
from contend.schedule.trace import compress
from contend.servers.record import RecordBroken
from contend.subject.protocols import ProtocolError


class _OutOfTime(BaseException):
    """The check's time budget is nearly spent: stop generating examples (Hypothesis does not
    catch a BaseException, so no shrinking or replay follows)."""


SCHEDULE_NAME = "schedule"
_BLOB = re.compile(r"@reproduce_failure\('([^']+)', b'([^']*)'\)")


def replay_text(exc: BaseException) -> str | None:
    """`<hypothesis version>:<blob>` from the reproduce_failure note Hypothesis added to `exc`."""
    for note in getattr(exc, "__notes__", ()):
        if match := _BLOB.search(note):
            return f"{match.group(1)}:{match.group(2)}"
    return None


#: What a replay looks like, for the messages that refuse one.
REPLAY_SHAPE = (
    "expected VERSION:BLOB exactly as a schedule failure's evidence prints it after `--replay`, "
    "e.g. 6.170.17:AXicc2RgcIRDBkcmCAMAHdkCjQ=="
)


def parse_replay(text: str) -> tuple[str, bytes]:
    """`version:blob` → (version, blob); ProtocolError saying what a replay looks like."""
    version, sep, blob = text.strip().partition(":")
    if not sep or not re.fullmatch(r"\d+\.\d+\.\d+", version) or not _decodes(blob):
        raise ProtocolError(f"--replay {text!r}: {REPLAY_SHAPE}")
    if version != hypothesis.__version__:
        raise ProtocolError(
            f"--replay was recorded with Hypothesis {version}; this is {hypothesis.__version__}. "
            f"Install the same one (pip install 'hypothesis=={version}') to replay it"
        )
    return version, blob.encode()


def _decodes(blob: str) -> bool:
    """Is `blob` one Hypothesis can read back (base64 of a compressed choice sequence)?"""
    if not re.fullmatch(r"[A-Za-z0-9+/=]+", blob):
        return False
    try:
        decode_failure(blob.encode())
    except InvalidArgument:
        return False
    return True


def replay_command(subject: Any, replay: str, where: tuple[str, ...] = ()) -> str:
    """The command that replays one failing example against the same implementation (`where`:
    the options that put its keys on the same slots and nodes of a Redis Cluster)."""
    return shlex.join([*subject.command, *where, *subject.selector, "--replay", replay])


def _cluster_options(ctx: CheckContext) -> tuple[str, ...]:
    """On a Redis Cluster, where an example's keys are depends on their names: the same cluster
    and the same run namespace (empty again once the run has cleaned up) give the same ones."""
    target = ctx.target
    if not target.cluster:
        return ()
    cluster = getattr(target, "embedded_cluster", None)
    where = ("--cluster", str(cluster.masters_wanted)) if cluster else ("--redis-url", target.masked_url)
    check = f":{ctx.subject.name}:{SCHEDULE_NAME}"
    run = ctx.namespace.prefix.removesuffix(check) if ctx.namespace.prefix.endswith(check) else ""
    return (*where, "--namespace", run) if run else where


def schedule_check(ctx: CheckContext) -> str:
    subject: Any = ctx.subject
    machine = family_machine(subject)
    options = ctx.options
    examples = options.hunt_examples if subject.known_bad else options.schedule_examples
    last: list[ScheduledMachine] = []
    # The latest example that broke a property (while Hypothesis shrinks it: the smallest yet).
    found: list[ScheduledMachine] = []
    tried = [0]
    out_of_time = [False]
    first: list[float] = []
    unjudged: dict[str, str] = {}  # what a property could not be judged on, by its cause
    met: Counter[str] = Counter()  # how often each property's situation arose, over the examples
    started = time.monotonic()

    def factory() -> ScheduledMachine:
        ctx.check_abandoned()
        if last and last[0].violation is not None:
            found[:] = last
        if ctx.wrap_up_by is not None and time.monotonic() > ctx.wrap_up_by and not options.replay:
            out_of_time[0] = True
            raise _OutOfTime  # while generating, or while shrinking a failure (then reported as found)
        tried[0] += 1
        made = machine(ctx.target, abandoned=ctx.abandoned, namespace=ctx.namespace.prefix)
        made.first_violation = first
        made.unjudged = unjudged
        made.met = met
        last[:] = [made]
        return made

    if options.replay:
        factory._hypothesis_internal_use_reproduce_failure = parse_replay(options.replay)  # type: ignore[attr-defined]
    try:
        with shrink_budget(options.shrink_seconds):
            run_state_machine_as_test(factory, settings=machine_settings(examples, shrink=options.shrink))  # type: ignore[arg-type]
    except PropertyViolated as exc:
        text, facts = _evidence(exc, last, subject, options.replay, _cluster_options(ctx))
        if first:
            facts["seconds_to_first"] = round(first[0] - started, 3)
            text += _shrink_stopped(options, time.monotonic() - first[0])
        raise CheckFailed(text, prop=exc.property, facts=facts) from None
    except _OutOfTime:
        if failure := _unshrunk(found, subject, first, started, _cluster_options(ctx)):
            raise failure from None
        ctx.not_exercised.update(_not_exercised(machine, subject, met, ctx))
        return _budget_spent(tried[0], examples)
    except DidNotReproduce:
        if not last or not last[0].scheduler.trace:
            raise InputRefused(
                f"--replay {options.replay!r} replays an example of no round trip: it is not one a "
                f"schedule failure printed ({REPLAY_SHAPE})"
            ) from None
        return "the replayed example ran to its end: no property broke this time"
    except (SchedulerError, UnknownCommand, RecordBroken) as exc:
        raise CheckInconclusive(str(exc)) from None
    except (Flaky, FlakyStrategyDefinition) as exc:
        if out_of_time[0]:
            # Stopping a test case before it draws anything is, to Hypothesis's data tree, a
            # case that "stopped drawing earlier" than one with the same prefix: not a flaky
            # implementation but the budget, which ran out between two examples.
            if failure := _unshrunk(found, subject, first, started, _cluster_options(ctx)):
                raise failure from None
            ctx.not_exercised.update(_not_exercised(machine, subject, met, ctx))
            return _budget_spent(tried[0], examples)
        raise CheckInconclusive(
            "the implementation behaved differently on the same schedule: it depends on something the "
            f"schedule does not control (a background thread, garbage collection, real time): {type(exc).__name__}"
        ) from None
    if unjudged:
        raise CheckInconclusive(
            _not_judged(unjudged, subject, examples, getattr(machine, "unjudged_property", SERIALIZABLE))
        )
    if options.replay:
        return "the replayed example ran to its end: no property broke this time"
    ctx.not_exercised.update(_not_exercised(machine, subject, met, ctx))
    return f"{examples} Hypothesis-chosen interleavings (seed fixed), no property broken" + _unjudged(
        ctx, machine
    )


def _not_exercised(
    machine: type[ScheduledMachine], subject: Any, met: Counter[str], ctx: CheckContext
) -> dict[str, str]:
    """The claimed properties the machine judges only in a situation none of its examples met
    (on a server that keeps its own time, those it cannot judge there are said by `_unjudged`)."""
    claims = set(getattr(subject, "claims", ())) | {PROGRESS}
    kept_time_only = ctx.target.clock is None and machine.judged_on_kept_time
    return {
        prop: situation
        for prop, situation in machine.situations_judged().items()
        if prop in claims and not met[prop] and not (kept_time_only and prop in machine.judged_on_kept_time)
    }


def _not_judged(unjudged: dict[str, str], subject: Any, examples: int, prop: str = SERIALIZABLE) -> str:
    """An inconclusive verdict on what `prop` could not be judged on, naming each cause; what held
    besides."""
    causes = "; ".join(unjudged.values())
    others = sorted(set(getattr(subject, "claims", ())) - {prop})
    held = f"; {', '.join(others)} held in {examples} Hypothesis-chosen interleavings" if others else ""
    return f"{prop} not judged where {causes}{held}"


def _unjudged(ctx: CheckContext, machine: type[ScheduledMachine]) -> str:
    """What was not judged because the server keeps its own time (one contend did not start)."""
    if ctx.target.clock is not None or not machine.judged_on_kept_time:
        return ""
    return (
        f"; {NOT_JUDGED}, which keeps its own time while the clients "
        f"keep a virtual one: {machine.judged_on_kept_time} (leave out --redis-url to judge them)"
    )


def _unshrunk(
    found: list[ScheduledMachine], subject: Any, first: list[float], started: float, where: tuple[str, ...]
) -> CheckFailed | None:
    """The failure the budget ran out on while Hypothesis shrank it (no replay blob yet), if any."""
    if not found or found[0].violation is None:
        return None
    exc = found[0].violation
    text, facts = _evidence(exc, found, subject, None, where)
    if first:
        facts["seconds_to_first"] = round(first[0] - started, 3)
    return CheckFailed(
        f"{text}\n    (not shrunk further: the check's time budget ran out while Hypothesis shrank it)",
        prop=exc.property,
        facts=facts,
    )


def _shrink_stopped(options: CheckOptions, since_found: float) -> str:
    """A note on the evidence when Hypothesis stopped shrinking it at its budget (the trace is the
    smallest found by then, and may hold steps the failure does not need)."""
    if options.replay or not options.shrink or since_found < options.shrink_seconds:
        return ""
    return (
        f"\n    (shrinking stopped at its budget of {options.shrink_seconds:g} s, --shrink-seconds: "
        "the smallest interleaving found by then)"
    )


def _budget_spent(tried: int, examples: int) -> str:
    return (
        f"{tried} state-machine runs (seed fixed) before the check's time budget ended the search, "
        f"short of the {examples} examples asked for: no property broken in what was tried"
    )


def _evidence(
    exc: PropertyViolated,
    last: list[ScheduledMachine],
    subject: Any,
    replayed: str | None,
    where: tuple[str, ...] = (),
) -> tuple[str, dict[str, Any]]:
    trace = last[0].scheduler if last else None
    until = getattr(last[0], "trace_at_failure", None) if last else None
    steps = [s for s in trace.trace[:until] if s.sent or s.note] if trace else []
    clients = len({s.client for s in steps if s.sent})
    round_trips = sum(1 for s in steps if s.sent)
    show_nodes = len({step.node for step in steps if step.node}) > 1  # a cluster's nodes
    lines = "\n".join("    " + line for line in compress(steps, show_nodes=show_nodes))
    replay = replay_text(exc) or replayed
    command = replay_command(subject, replay, where) if replay and subject.selector else ""
    again = f"\n    replay: {command}" if command else ""
    facts: dict[str, Any] = {
        "clients": clients,
        "round_trips": round_trips,
        "trace": compress(steps, show_nodes=show_nodes),
    }
    if command:
        facts["replay"] = command
    if not round_trips:  # it broke before any client sent anything: only notes, if any
        notes = f":\n{lines}" if lines else ""
        return f"{exc.detail} — before any round trip{notes}{again}", facts
    return f"{exc.detail} — {clients} client(s), {round_trips} round trip(s):\n{lines}{again}", facts


SCHEDULE = Check(
    SCHEDULE_NAME,
    "Hypothesis chooses the interleaving of round trips, stalls, crashes and clock jumps",
    schedule_check,
    judges_slot_refusals=True,
)
