"""One table of exit codes for every contend command and the Locust harness.

A CI step can branch on the code alone: 1 is always "the code under test is
wrong", 3 always "no verdict in the time given", 2 always "contend was asked
something it cannot do", whatever the command.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    """What a run's exit code means, the same in every command."""

    #: Every check as expected: correct code passed, known-bad code was caught, the history is
    #: linearizable and every invariant holds.
    OK = 0
    #: A violation: a check not as expected, a history not linearizable, an invariant broken
    #: (also a Locust run's end-of-run check, and Locust's own code for failed requests).
    FAILED = 1
    #: Bad input, refused before anything was changed (unknown names, unreachable URLs, malformed
    #: files), or a run that could not test what was asked (a nemesis that injected no fault).
    BAD_INPUT = 2
    #: Nothing failed, but no verdict either: a time budget ran out first.
    INCONCLUSIVE = 3
    #: Stopped by SIGINT (Ctrl-C); the results so far are printed and the servers stopped.
    INTERRUPTED = 130
    #: Stopped by SIGTERM, likewise.
    TERMINATED = 143


#: The table as --help and docs/ci.md ("Exit codes") show it.
TABLE: tuple[tuple[int, str], ...] = (
    (ExitCode.OK, "as expected: passed, known-bad caught, linearizable, invariants hold"),
    (ExitCode.FAILED, "a violation: not as expected, not linearizable, an invariant broken"),
    (ExitCode.BAD_INPUT, "bad input (nothing changed), or a requested fault that never happened"),
    (ExitCode.INCONCLUSIVE, "nothing failed, but a time budget ran out before a verdict"),
    (ExitCode.INTERRUPTED, "interrupted by Ctrl-C (143: SIGTERM); results so far printed"),
)


def epilog() -> str:
    """The exit-code table for the end of a command's --help (RawDescriptionHelpFormatter)."""
    return "exit codes (the same in every command):\n" + "\n".join(
        f"  {code:>3}  {what}" for code, what in TABLE
    )


def name(code: int) -> str:
    """A word for a code, for JSON documents and summaries: ok, failed, bad-input, ..."""
    try:
        return ExitCode(code).name.lower().replace("_", "-")
    except ValueError:
        return f"exit-{code}"
