"""The `schedule` check: the family's state machine, with Hypothesis choosing the interleaving.

Correct implementations get `schedule_examples` examples with no property
broken. Known-bad ones are searched for up to `hunt_examples` examples, and the
first failure is shrunk (unless `shrink` is off) to the fewest clients and
round trips; the check's evidence is the property that broke and that
interleaving, round trip by round trip. The seed is fixed (derandomized), so
the verdict is the same on every run of the same code.
"""

from __future__ import annotations

from typing import Any

from hypothesis.stateful import run_state_machine_as_test

from contend.check.framework import CheckContext, CheckFailed
from contend.machines.base import PropertyViolated, ScheduledMachine
from contend.machines.family import family_machine
from contend.machines.settings import machine_settings
from contend.schedule.scheduler import compress, schedule_expression


def schedule_check(ctx: CheckContext) -> str:
    subject: Any = ctx.subject
    machine = family_machine(subject)
    options = ctx.options
    examples = options.hunt_examples if subject.known_bad else options.schedule_examples
    last: list[ScheduledMachine] = []

    def factory() -> ScheduledMachine:
        last[:] = [machine(ctx.target)]
        return last[0]

    try:
        run_state_machine_as_test(factory, settings=machine_settings(examples, shrink=options.shrink))  # type: ignore[arg-type]
    except PropertyViolated as exc:
        trace = last[0].scheduler if last else None
        steps = [s for s in trace.trace if s.sent or s.note] if trace else []
        clients = len({s.client for s in steps if s.sent})
        round_trips = sum(1 for s in steps if s.sent)
        lines = "\n".join("    " + line for line in compress(steps))
        replay = schedule_expression(trace.schedule) if trace else "[]"
        raise CheckFailed(
            f"{exc} — {clients} client(s), {round_trips} round trip(s):\n{lines}\n"
            f"    replay: ReplayChooser({replay})"
        ) from None
    return f"{examples} Hypothesis-chosen interleavings (seed fixed), no property broken"
