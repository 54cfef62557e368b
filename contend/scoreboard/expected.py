"""What the scoreboard is expected to find, and why: kept in the repository so that CI notices
when a library release changes a verdict.

Every claimed property of every row is expected to pass unless FINDINGS lists it. A finding
says where the defect is in the library's own source, whether the library documents it
("documented" is a limitation its users were told about, not a bug), and which standalone
reproduction (plain redis-py and threads, no contend) shows it is the library's behaviour and
not the adapter's or contend's. LIMITATIONS are what each library does not promise at all,
so the table is not read as more than it says.
"""

from __future__ import annotations

from dataclasses import dataclass

from contend.impl.catalog import MUTUAL_EXCLUSION

#: The versions the expectations were recorded with (the scoreboard says when another is installed).
RECORDED_WITH: dict[str, str] = {
    "redis": "8.1.0",
    "python-redis-lock": "4.0.1",
    "pottery": "3.0.1",
    "sherlock": "0.4.1",
}


@dataclass(frozen=True)
class Finding:
    """A property a row is expected to break."""

    library: str  # Library.key
    prop: str
    source: str  # file and function in the library
    explanation: str  # one paragraph
    documented: bool  # the library's documentation says so (a limitation, not a bug)
    reproduction: str  # path of the standalone reproduction under tests/


FINDINGS: tuple[Finding, ...] = (
    Finding(
        "sherlock-no-expiry",
        MUTUAL_EXCLUSION,
        "sherlock/lock.py: `RedisLock._acquire` and `RedisLock._acquire_script`",
        'With `expire=None`, which sherlock\'s README shows as the way to "never expire locks", '
        "`RedisLock._acquire` passes -1 as the script's ARGV[2]. The acquire script guards its "
        "EXPIRE with `if result == 1 and ARGV[2] ~= -1`, but ARGV values reach Lua as strings, "
        'so `"-1" ~= -1` is always true and the script runs `EXPIRE key -1`, which deletes the '
        "key it has just set. `acquire()` returns True while nothing is held, and the next "
        "client acquires too: every holder believes it is alone. (`_renew_script` has the same "
        "comparison.)",
        documented=False,
        reproduction="tests/scoreboard/reproductions/sherlock_no_expiry.py",
    ),
)


#: What each library does not promise (documented) or quietly lacks (seen in its source), so
#: that a row of passes is not read as more than it is. Keyed by Library.key.
LIMITATIONS: dict[str, tuple[tuple[str, bool], ...]] = {
    "redis-py": (
        ('no fencing token: "It\'s left to the user to resolve deadlock issues" (redis/lock.py)', True),
        (
            "the token is thread-local by default: `release()` from another thread raises "
            "AttributeError, not LockError (redis/lock.py `Lock.__init__` sets `local.token` in the "
            "constructing thread only)",
            False,
        ),
    ),
    "redis-py-asyncio": (
        (
            'no fencing token: "It\'s left to the user to resolve deadlock issues" (redis/asyncio/lock.py)',
            True,
        ),
        (
            "judged by the async battery only so far: the state machine (with cancelled releases) and "
            "the cancel check; the real-time checks (bursts, expiry, crashes) are synchronous",
            False,
        ),
        (
            "a release cancelled while it awaits the compare-and-delete keeps the token (PR #3900, the "
            "fix of issue #3847) but does not shield the delete: the caller must release again",
            False,
        ),
    ),
    "python-redis-lock": (
        ("no fencing token", True),
        ("leases are whole seconds (`int(expire)`); without `expire` a crashed holder's lock stays", True),
        (
            "`acquire(timeout=t)` waits up to t per BLPOP, not in total: it can return False after "
            "nearly 2t (`Lock.acquire`); a lease that runs out wakes no waiter before its BLPOP "
            "timeout",
            False,
        ),
    ),
    "python-redis-lock-renewal": (
        ("no fencing token", True),
        (
            "when a renewal fails (the lease was lost) the renewal thread dies with a traceback on "
            "stderr and the holder is not told (`Lock._lock_renewer`)",
            False,
        ),
    ),
    "pottery": (
        ("no fencing token (pottery's NextID is a separate primitive)", True),
        ("one `Redlock` object must not be shared between threads (README)", True),
    ),
    "pottery-3": (
        ("no fencing token", True),
        (
            "safety rests on the client's timer and a 1% drift allowance (Redlock); contend's "
            "clock checks move wall clocks, which Redlock does not read",
            True,
        ),
    ),
    "sherlock": (
        ("no fencing token", True),
        (
            "`expire` must be a whole number: a float (which the docstring allows) sets the key and "
            "then fails, leaving it with no TTL (`RedisLock._acquire_script`)",
            False,
        ),
        ("a blocking acquire's `timeout` counts retries, not time", False),
    ),
    "sherlock-no-expiry": (("no fencing token", True),),
}


def expected_failures(library: str) -> dict[str, Finding]:
    """The properties `library` is expected to break, with the finding for each."""
    return {f.prop: f for f in FINDINGS if f.library == library}
