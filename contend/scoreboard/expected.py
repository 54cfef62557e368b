"""What the scoreboard is expected to find, and why: kept in the repository so that CI notices
when a library release changes a verdict.

Every claimed property of every row is expected to pass unless FINDINGS lists it. A finding
says where the defect is in the library's own source, whether the library documents it
("documented" is a limitation its users were told about, not a bug), and which standalone
reproduction (plain redis-py and threads, no contend) shows it is the library's behaviour and
not the adapter's or contend's. What each library does not promise at all is in
contend.scoreboard.limitations.
"""

from __future__ import annotations

from dataclasses import dataclass

from contend.impl.catalog import (
    CRASH_LIVENESS,
    FIXED_WINDOW,
    MUTUAL_EXCLUSION,
    NO_SPURIOUS_ERRORS,
    PROGRESS,
    SAFE_RELEASE,
)

#: The redis-py the expectations were recorded with (the other libraries' versions are pinned in
#: contend.scoreboard.libraries; the scoreboard says when another one ran).
RECORDED_WITH: dict[str, str] = {"redis": "8.1.0"}

#: What a finding says when the library's tracker has nothing on it.
NOT_IN_TRACKER = "not found in the tracker"


#: Whose promise a finding breaks: the library's own (its documentation, quoted), or only
#: contend's protocol (docs/protocol.md), which is stricter than what the library says.
LIBRARY, CONTEND = "library", "contend"
#: What the library's tracker knows of a finding: nothing, something related, or this very defect.
TRACKER_NOT_FOUND, TRACKER_RELATED, TRACKER_KNOWN = "not-found", "related", "known"
PROTOCOL = "docs/protocol.md"


@dataclass(frozen=True)
class Promise:
    """The promise a finding breaks: whose, in what words, and where they are written."""

    whose: str  # LIBRARY or CONTEND
    #: The library's own words, quoted; or contend's rule, named ("safe release: ...").
    text: str
    #: Where: the library's README, docs or docstring (a URL), or the section of docs/protocol.md.
    link: str


@dataclass(frozen=True)
class Finding:
    """A property a row is expected to break."""

    library: str  # Library.key
    prop: str
    source: str  # file and function in the library
    explanation: str  # one paragraph
    documented: bool  # the library's documentation says so (a limitation, not a bug)
    reproduction: str  # path of the standalone reproduction under tests/
    #: Whether the library's tracker knows it: the issue or PR, or NOT_IN_TRACKER (with what is related).
    tracker: str = NOT_IN_TRACKER
    #: Why a run may not meet it (what it depends on that no seed fixes), or "" when every run must.
    sometimes: str = ""
    #: The checks that meet it (required with `sometimes`): a run that did not meet it runs them
    #: again, with other seeds, until one does (contend.scoreboard.confirm).
    met_by: tuple[str, ...] = ()
    #: Whose promise it breaks, quoted or named, with where (required: tests/scoreboard checks it).
    promise: Promise | None = None
    #: The tracker's issues and pull requests it cites (URLs), related or the same.
    refs: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        """documented (a limitation its users were told of), protocol (breaks only contend's
        stricter protocol), or bug (breaks the library's own promise)."""
        if self.documented:
            return "documented"
        return "protocol" if self.promise is not None and self.promise.whose == CONTEND else "bug"

    @property
    def tracker_status(self) -> str:
        """TRACKER_NOT_FOUND, TRACKER_RELATED or TRACKER_KNOWN, read off `tracker`."""
        if self.tracker.startswith(NOT_IN_TRACKER):
            return TRACKER_NOT_FOUND
        return TRACKER_RELATED if self.tracker.startswith("related") else TRACKER_KNOWN

    @property
    def anchor(self) -> str:
        """The id of its section in the report (the same in GitHub, MkDocs and the HTML page)."""
        return f"finding-{self.library}-{self.prop}"


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
        tracker=f"{NOT_IN_TRACKER} (the never-expiring path came with "
        "https://github.com/py-sherlock/sherlock/pull/37, which meant locks without expiry to last)",
        promise=Promise(
            LIBRARY,
            "Distributed inter-process locks with a choice of backend ... never expire locks (expire=None)",
            "https://github.com/py-sherlock/sherlock/blob/master/README.rst",
        ),
        refs=("https://github.com/py-sherlock/sherlock/pull/37",),
    ),
    Finding(
        "sherlock-no-expiry",
        SAFE_RELEASE,
        "sherlock/lock.py: `RedisLock._acquire_script` (see its mutual-exclusion finding)",
        "The same cause as its mutual-exclusion finding: the acquire script deletes the key it has "
        "just set, so every holder holds nothing and any client acquires at any time. The "
        "lost-reply check, in every run, reads a third client's grant after a release whose reply "
        "was lost as that release having freed the waiter's lease (so may the state machine).",
        documented=False,
        reproduction="tests/scoreboard/reproductions/sherlock_no_expiry.py",
        tracker=f"{NOT_IN_TRACKER} (see its mutual-exclusion finding)",
        promise=Promise(
            LIBRARY,
            "Distributed inter-process locks with a choice of backend ... never expire locks (expire=None)",
            "https://github.com/py-sherlock/sherlock/blob/master/README.rst",
        ),
        refs=("https://github.com/py-sherlock/sherlock/pull/37",),
    ),
    Finding(
        "celery-once",
        SAFE_RELEASE,
        "celery_once/backends/redis.py: `Redis.clear_lock` (`self.redis.delete(key)`), which "
        "`QueueOnce.after_return` (celery_once/tasks.py) calls when a task ends",
        "The lock is taken with redis-py's token-checked `Lock`, but released with a plain DEL. A "
        "task that runs past its `timeout` (the README's fall back: the lock clears after it) has "
        "lost its lock; a second run of the task is queued and locks; when the first run ends, "
        "`clear_lock` deletes the second run's lock, and a third run is queued while the second "
        "still runs: two runs at once, which is what celery-once exists to prevent. Releasing "
        "through the `Lock` it acquired with (its token) would leave the successor's lock alone.",
        documented=False,
        reproduction="tests/scoreboard/reproductions/celery_once_clear_lock.py",
        tracker=f"{NOT_IN_TRACKER} (cameronmaske/celery-once; the same pattern in Celery's own "
        "cookbook is https://github.com/celery/celery/issues/2926)",
        promise=Promise(
            LIBRARY,
            "Once the task completes (or ends due to an exception) the lock will clear. If an attempt is made to run the task again before it completes an AlreadyQueued exception will be raised.",
            "https://github.com/cameronmaske/celery-once/blob/master/README.rst",
        ),
        refs=("https://github.com/celery/celery/issues/2926",),
    ),
    Finding(
        "celery-singleton",
        SAFE_RELEASE,
        "celery_singleton/backends/redis.py: `RedisBackend.unlock` (`self.redis.delete(lock)`), "
        "which `Singleton.release_lock` calls from `on_success` and `on_failure`",
        "The lock is `SET lock task_id NX EX expiry` and the unlock a plain DEL, though the lock "
        "holds the task id. A task that runs past its `lock_expiry` lets a duplicate lock and "
        "start; when the first ends, `unlock` deletes the duplicate's lock and a third copy is "
        "queued while the second runs. Deleting only when the value is the task's own id (a "
        "compare-and-delete script) would leave the successor's lock alone.",
        documented=False,
        reproduction="tests/scoreboard/reproductions/celery_singleton_unlock.py",
        tracker="related: https://github.com/steinitzu/celery-singleton/pull/51 (open: keep the lock "
        "while lock_expiry is valid after a task ends) touches the same unlock, but no issue or PR "
        "makes it check whose lock it deletes",
        promise=Promise(
            LIBRARY,
            "Prevent duplicate celery tasks",
            "https://github.com/steinitzu/celery-singleton/blob/master/README.md",
        ),
        refs=("https://github.com/steinitzu/celery-singleton/pull/51",),
    ),
    Finding(
        "cashews",
        CRASH_LIVENESS,
        "cashews/backends/interface.py: `Backend.lock`, whose `finally: await self.unlock(key, "
        "identifier)` is not shielded from cancellation",
        "`lock()` is an async context manager that unlocks in a `finally`. A task cancelled while "
        "that unlock waits for a connection (a request timeout, a shutdown) never sends it: the "
        "context manager is finished and cannot be left again, so the key stays until `expire` "
        "runs out with nobody able to release it, the way redis-py's asyncio lock did before "
        "its issue #3847 was fixed. Shielding the unlock (or retrying it) would free the lock "
        "at once.",
        documented=False,
        reproduction="tests/scoreboard/reproductions/cashews_cancelled_unlock.py",
        tracker=f"{NOT_IN_TRACKER} (Krukov/cashews)",
        promise=Promise(
            CONTEND,
            "the cancel check: a holder whose release() was cancelled and that calls release() again leaves the lock free at once (stricter than crash liveness, which allows the lease's TTL)",
            "docs/protocol.md#async-code",
        ),
        refs=("https://github.com/redis/redis-py/issues/3847",),
    ),
    Finding(
        "redis-semaphore",
        CRASH_LIVENESS,
        "redis_semaphore/__init__.py: `Semaphore._exists_or_init` (and `current_time`)",
        "An acquire first runs `GETSET <ns>:EXISTS ok` and, if it was the first, creates the "
        "tokens (`_init`). A client that dies between the two leaves EXISTS without a TTL and no "
        "tokens: every later acquire sees EXISTS, creates nothing and finds no token, for ever; "
        "`stale_client_timeout` cannot help, since no token was grabbed. Separately, "
        "`current_time` joins the server's seconds and microseconds as strings, so 5123 µs reads "
        "as 0.5123 s: a crashed holder's token can come back up to a second late (the model "
        "check's finding).",
        documented=False,
        reproduction="tests/scoreboard/reproductions/redis_semaphore_crash.py",
        tracker="related: https://github.com/bluele/redis-semaphore/pull/12 (closed, not merged: "
        "the same GETSET-then-EXPIRE crash window in `release_stale_locks`, on the RELEASE_LOCKS "
        "key, where a client killed between the two leaves the key without a TTL and stale tokens "
        "never come back); https://github.com/bluele/redis-semaphore/issues/15 (open: after a crash "
        "a new process cannot acquire although stale_client_timeout passed), maybe the same; the "
        "Ruby original's https://github.com/dv/redis-semaphore/issues/49 shows the same state "
        "(EXISTS, no AVAILABLE)",
        promise=Promise(
            LIBRARY,
            "A distributed semaphore and mutex built on Redis. (stale_client_timeout: a crashed client's token comes back)",
            "https://github.com/bluele/redis-semaphore/blob/master/README.md",
        ),
        refs=(
            "https://github.com/bluele/redis-semaphore/pull/12",
            "https://github.com/bluele/redis-semaphore/issues/15",
            "https://github.com/dv/redis-semaphore/issues/49",
            "https://github.com/dv/redis-semaphore/pull/39",
            "https://github.com/dv/redis-semaphore/pull/66",
        ),
    ),
    Finding(
        "pottery-nextid",
        NO_SPURIOUS_ERRORS,
        "pottery/nextid.py: `NextID.__next__` (its `num_tries` loop over the `__current_id` getter "
        "and setter)",
        "A draw reads the current id from a majority of masters, then sets current + 1 with a "
        "script that only moves the id forward; when another draw moved it first, the set is "
        "refused, counted as QuorumNotAchieved and tried again, `num_tries` (3) times in all. "
        "With 8 clients drawing at once from one healthy server, over a third of the draws "
        "raised QuorumNotAchieved (the ids handed out were distinct and increasing). Its "
        'docstring promises IDs produced "safely and reliably" and describes QuorumNotAchieved '
        "as not achieving a quorum of masters, not as losing a race; retrying a lost race "
        "without a bound (it cannot make the id go backwards) would remove the error.",
        documented=False,
        reproduction="tests/scoreboard/reproductions/pottery_nextid_contention.py",
        tracker=f"{NOT_IN_TRACKER} (brainix/pottery)",
        promise=Promise(
            CONTEND,
            "no spurious errors: an operation on a healthy server does not raise (pottery documents QuorumNotAchieved as a quorum of masters not reached, and retries do not raise it here by design)",
            "docs/protocol.md#what-a-factory-must-do",
        ),
    ),
    Finding(
        "redis-semaphore",
        SAFE_RELEASE,
        "redis_semaphore/__init__.py: `Semaphore.release` (`has_lock` asks whether the token is "
        "grabbed, not whether this holder grabbed it) and `release_stale_locks`",
        "Tokens are the numbers 0..count-1, so a grant cannot be told from a later grant of the "
        "same token. A holder that stalls past `stale_client_timeout` has its token given back "
        "by the next acquire, which may take that very token; the stalled holder's `release` "
        "then finds the token grabbed (by its successor), pushes it back, and a third client "
        "takes it while the second still holds it.",
        documented=False,
        reproduction="tests/scoreboard/reproductions/redis_semaphore_token_reuse.py",
        tracker="related: https://github.com/bluele/redis-semaphore/issues/14 (open: `signal` of a "
        "token not held adds a slot), the same want of an owner check on release; in the Ruby "
        "original it is known: https://github.com/dv/redis-semaphore/issues/10 (open: a stale "
        "token is pushed back twice, by `release_stale_locks` and by its holder that still runs) "
        "and https://github.com/dv/redis-semaphore/pull/58 (closed: check the grab's time before "
        "giving a stale token back)",
        sometimes="whether a stalled holder counts as stale depends on the microseconds of the server's "
        "clock (`current_time` reads 5123 µs as 0.5123 s), so the model check meets it in some runs",
        met_by=("model", "model-n"),
        promise=Promise(
            LIBRARY,
            "A distributed semaphore and mutex built on Redis.",
            "https://github.com/bluele/redis-semaphore/blob/master/README.md",
        ),
        refs=(
            "https://github.com/bluele/redis-semaphore/issues/14",
            "https://github.com/dv/redis-semaphore/issues/10",
            "https://github.com/dv/redis-semaphore/pull/58",
        ),
    ),
    Finding(
        "redis-semaphore",
        MUTUAL_EXCLUSION,
        "redis_semaphore/__init__.py: `Semaphore.current_time` "
        "(`float('.'.join(map(str, self.client.time())))`), read by `release_stale_locks`",
        "The server's TIME is seconds and microseconds; joined as strings, 5123 µs reads as "
        "0.5123 s, so in the first tenth of every second the semaphore's clock runs up to a second "
        "fast. An acquire there finds a live holder's grab older than `stale_client_timeout`, gives "
        "its token back and takes it: with `stale_client_timeout=1`, a holder's token went to "
        "another client 0.66 s after it was granted (3 runs of 3), with no stall, while the holder "
        "still held it: two holders of one slot. (A grab recorded in such a tenth looks younger "
        "instead, and a crashed holder's token comes back late: its crash-liveness finding.) The "
        "lease model check meets the same property broken a second way, a stalled holder's late "
        "release (its safe-release finding).",
        documented=False,
        reproduction="tests/scoreboard/reproductions/redis_semaphore_clock.py",
        tracker=f"{NOT_IN_TRACKER} (bluele/redis-semaphore: nothing on `current_time`; its second "
        "way is the safe-release finding's, related to "
        "https://github.com/bluele/redis-semaphore/issues/14 and known in the Ruby original as "
        "https://github.com/dv/redis-semaphore/issues/10)",
        promise=Promise(
            LIBRARY,
            "A distributed semaphore and mutex built on Redis.",
            "https://github.com/bluele/redis-semaphore/blob/master/README.md",
        ),
        refs=(
            "https://github.com/bluele/redis-semaphore/issues/14",
            "https://github.com/dv/redis-semaphore/issues/10",
        ),
    ),
    Finding(
        "redis-semaphore",
        PROGRESS,
        "redis_semaphore/__init__.py: `Semaphore.current_time` (see its mutual-exclusion finding)",
        "The same cause as its mutual-exclusion finding, as the many-permit model check sees it: "
        "a token given back early while its holder still holds it is held twice, the count of "
        "tokens no longer matches the grants, and a later acquire is refused while the model "
        "counts a permit free. (Contend's model check names a refused acquire of a free permit "
        "progress; the property the clock breaks is mutual exclusion, which the hold check meets.)",
        documented=False,
        reproduction="tests/scoreboard/reproductions/redis_semaphore_clock.py",
        tracker=f"{NOT_IN_TRACKER} (bluele/redis-semaphore: nothing on `current_time`)",
        sometimes="the model check meets it when a holder's grab and a later acquire fall on either "
        "side of a second's first tenth on the real clock, which no seed fixes",
        met_by=("model-n", "model"),
        promise=Promise(
            CONTEND,
            "progress: an acquire of a free permit is granted (the model check's rule; the "
            "semaphore's clock runs fast, which its documentation does not speak of)",
            "docs/protocol.md#what-a-factory-must-do",
        ),
    ),
    Finding(
        "redis-lock-py",
        PROGRESS,
        "redis_lock/lock.py: `RedisLock.acquire` (`pubsub_timeout += delay_interval * 2 ** attempts`)",
        "A waiter subscribes to the lock's channel and retries its SET when a message comes or its "
        "wait times out; the wait grows exponentially (0.5 s, 1.5 s, 3.5 s, 7.5 s, ...). A lease "
        "that expires (its holder died) publishes nothing, so the waiter notices it only at its "
        "next time-out: a 3 s lease whose holder died is taken about 2.5 s after it ran out, and "
        "the lateness grows with the wait. The state machine met an acquire still waiting 20 s "
        "after a 10 s lease. The growing delay is documented (`delay_interval`); that it also "
        "delays noticing an expired lease is not.",
        documented=False,
        reproduction="tests/scoreboard/reproductions/redis_lock_py_backoff.py",
        tracker="related: https://github.com/miintto/redis-lock-py/issues/3 (a waiter missed the "
        "release message) and https://github.com/miintto/redis-lock-py/pull/4, which added the "
        "growing wait; neither discusses a lease that expires",
        sometimes="the state machine meets it when it draws an expiry while a waiter's wait has grown; "
        "its search is bounded in real time, so not every run gets there",
        met_by=("schedule",),
        promise=Promise(
            CONTEND,
            "crash liveness: a lease whose holder died is taken within a few TTLs (the README documents the growing wait, `delay_interval`, not how late an expired lease is noticed)",
            "docs/protocol.md#what-a-factory-must-do",
        ),
        refs=(
            "https://github.com/miintto/redis-lock-py/issues/3",
            "https://github.com/miintto/redis-lock-py/pull/4",
        ),
    ),
    Finding(
        "dramatiq",
        MUTUAL_EXCLUSION,
        "dramatiq/rate_limits/concurrent.py: `ConcurrentRateLimiter._release` (see its safe-release "
        "finding: the same decrement of the shared counter)",
        "The same cause as its safe-release finding, met by the semaphore model check with several "
        "permits: a release by a holder whose slot already expired takes back a slot another "
        "holder counts on, and one more holder than `limit` is admitted.",
        documented=False,
        reproduction="tests/scoreboard/reproductions/dramatiq_late_release.py",
        tracker=f"{NOT_IN_TRACKER} (Bogdanp/dramatiq)",
        sometimes="the many-permit model check meets it in the full board's 150 operations, seldom in "
        "--quick's 100",
        met_by=("model-n",),
        promise=Promise(
            LIBRARY,
            "A rate limiter that ensures that only `limit` concurrent operations may happen at the same time. ... You can use a concurrent rate limiter of size 1 to get a distributed mutex.",
            "https://github.com/Bogdanp/dramatiq/blob/master/dramatiq/rate_limits/concurrent.py",
        ),
    ),
    Finding(
        "dramatiq",
        SAFE_RELEASE,
        "dramatiq/rate_limits/concurrent.py: `ConcurrentRateLimiter._release` (`backend.decr` of "
        "the one shared counter, dramatiq/rate_limits/backends/redis.py)",
        "Holders have no identity: the limiter is one counter whose key expires `ttl` ms after "
        "its last change, and a release decrements it whoever took the slot. With limit 1 (the "
        'docstring\'s "distributed mutex"), a holder that runs past `ttl` loses the key, a second '
        "holder sets it to 1, the first one's release takes it back to 0, and a third is "
        "admitted while the second still holds the slot.",
        documented=False,
        reproduction="tests/scoreboard/reproductions/dramatiq_late_release.py",
        tracker=f"{NOT_IN_TRACKER} (Bogdanp/dramatiq)",
        promise=Promise(
            LIBRARY,
            "A rate limiter that ensures that only `limit` concurrent operations may happen at the same time. ... You can use a concurrent rate limiter of size 1 to get a distributed mutex.",
            "https://github.com/Bogdanp/dramatiq/blob/master/dramatiq/rate_limits/concurrent.py",
        ),
    ),
    Finding(
        "huey-lock",
        SAFE_RELEASE,
        "huey/api.py: `TaskLock.release` (`release = clear`: `self._huey.delete(self._key)`, an HDEL "
        "of the lock's field whoever set it)",
        "The lock is one field of huey's result hash, set with HSETNX to the same value by every "
        "acquirer, and released by deleting the field: a `release()` by a client that does not hold "
        "the lock (its acquire was refused, or it released already) frees the holder's lock, and a "
        "third client acquires while the holder still runs. huey uses the lock as a context manager "
        "around a task, which releases only what it acquired, and documents no more: this breaks "
        "contend's protocol (a release is judged by its effect on other holders), not huey's promise.",
        documented=False,
        reproduction="tests/scoreboard/reproductions/huey_lock_release.py",
        tracker=f"{NOT_IN_TRACKER}: related https://github.com/coleifer/huey/issues/555 (the maintainer: "
        'the lock is "essentially a wrapper around put_if_empty() and delete()") and '
        "https://github.com/coleifer/huey/pull/858 (clear() as the way to let go)",
        promise=Promise(
            CONTEND,
            "safe release: a release() of a lock not held may refuse or return, and must leave another "
            "holder's lock alone (huey promises: \"This lock is designed to be used to prevent multiple "
            'invocations of a task from running concurrently")',
            "docs/protocol.md#what-a-factory-must-do",
        ),
        refs=("https://github.com/coleifer/huey/issues/555", "https://github.com/coleifer/huey/pull/858"),
    ),
    Finding(
        "beaker",
        SAFE_RELEASE,
        "beaker/ext/redisnm.py: `RedisSynchronizer.do_release_write_lock` (`client.transaction("
        "execute_release, identifier)`, whose `execute_release` GETs and DELs with no `pipe.multi()`)",
        "The release WATCHes the lock's key, GETs it and, when it holds this thread's owner id, DELs "
        "it; it never calls `multi()`, so the DEL runs at once in the pipeline's immediate mode and "
        "the WATCH guards nothing. A holder that stalls between its GET and its DEL past its lease "
        "(LOCK_EXPIRATION) deletes the lock its successor has taken since, and a third client takes "
        "it while the successor still holds it: two writers, which the synchronizer exists to "
        "prevent. redis-py's own Lock had the same bug until its PR #1031; a Lua compare-and-delete "
        "(or the DEL queued after `multi()`) would leave the successor's lock alone. (The model "
        "check fails safe-release for another reason too, which is contend's: its three clients "
        "run in one thread, and Beaker's owner id is the thread.)",
        documented=False,
        reproduction="tests/scoreboard/reproductions/beaker_release_race.py",
        tracker=f"{NOT_IN_TRACKER} (bbangert/beaker; https://github.com/bbangert/beaker/pull/164 made "
        "the acquire atomic, the release was left as it was; the same bug in redis-py was "
        "https://github.com/redis/redis-py/pull/1031)",
        promise=Promise(
            LIBRARY,
            "This Synchronizer only supports 1 reader or 1 writer at time, not concurrent readers.",
            "https://github.com/bbangert/beaker/blob/master/beaker/ext/redisnm.py",
        ),
        refs=("https://github.com/bbangert/beaker/pull/164", "https://github.com/redis/redis-py/pull/1031"),
    ),
    Finding(
        "beaker",
        MUTUAL_EXCLUSION,
        "beaker/synchronization.py: `SynchronizerImpl.release_write_lock` and `acquire_write_lock` "
        "(the thread-local `state.writing` and `reentrantcount`)",
        "The synchronizer keeps, per thread, whether it is writing and how often it re-entered; "
        "`release_write_lock` clears that only after `do_release_write_lock` returns. A release that "
        "raises (a lost reply, a connection reset) leaves the thread marked as writing, and that "
        "thread's next `acquire_write_lock` returns True at once, re-entrant, without asking Redis, "
        "even after its lease ran out and another client took the lock: two writers. Clearing the "
        "local state whatever the release did (or re-acquiring on the server when re-entering) "
        "would keep the thread out. The reacquire check meets it in every run: a release loses "
        "its reply after the server ran its DEL, another client takes the lock, and the releasing "
        "thread's next acquire is granted too.",
        documented=False,
        reproduction="tests/scoreboard/reproductions/beaker_reentrant_after_failed_release.py",
        tracker=f"{NOT_IN_TRACKER} (bbangert/beaker)",
        promise=Promise(
            LIBRARY,
            "This Synchronizer only supports 1 reader or 1 writer at time, not concurrent readers.",
            "https://github.com/bbangert/beaker/blob/master/beaker/ext/redisnm.py",
        ),
    ),
    Finding(
        "pyrate-limiter",
        FIXED_WINDOW,
        "pyrate_limiter/buckets/redis_bucket.py: `LuaScript.PUT_ITEM` (`ZCOUNT bucket window_start now`) "
        "with the time `SingleBucketFactory.wrap_item` reads (`RedisBucket.now()`) before the script runs",
        "A hit's time is read on the client, then its script counts the sorted set's members between "
        "`now - interval` and `now`, that same time. A member stamped later than `now`, by a hit that read "
        "its clock after this one and whose script ran first (another thread, process or host, no clock "
        "skew needed), is not counted: both are admitted. Threads released together on one key (limit 5) "
        "had 6 or more admitted in one window; with a limit of 1, a client preempted between its clock "
        "read and its script and another client's hit meanwhile are both admitted. Counting to +inf "
        "(every member not yet leaked), or taking the time in the script (TIME), would count them.",
        documented=False,
        reproduction="tests/scoreboard/reproductions/pyrate_limiter_stale_stamp.py",
        tracker="related: https://github.com/vutran1710/PyrateLimiter/issues/172 (open: threads, each "
        "with a Limiter on one RedisBucket, are not limited as configured; no cause found) and "
        "https://github.com/vutran1710/PyrateLimiter/issues/55 (closed, v2: timestamps of async workers "
        "out of order in a Redis list); neither names the count's upper bound",
        sometimes="the burst check meets it when its threads' clock reads and scripts interleave in "
        "real time, which no seed fixes; the synchronous state machine seldom orders a later-stamped "
        "hit's script first",
        met_by=("burst", "schedule"),
        promise=Promise(
            LIBRARY,
            "RedisBucket stores one sorted-set member per consumed unit for exact sliding-window checks.",
            "https://github.com/vutran1710/PyrateLimiter/blob/master/README.md",
        ),
        refs=(
            "https://github.com/vutran1710/PyrateLimiter/issues/172",
            "https://github.com/vutran1710/PyrateLimiter/issues/55",
        ),
    ),
    Finding(
        "fastapi-limiter",
        FIXED_WINDOW,
        "pyrate_limiter/buckets/redis_bucket.py: `LuaScript.PUT_ITEM`, which fastapi-limiter's "
        "`WebSocketRateLimiter.__call__` (fastapi_limiter/depends.py) reaches through "
        "`Limiter.try_acquire_async` (see pyrate-limiter's fixed-window finding)",
        "fastapi-limiter 0.2.0 has no Redis code of its own: a request is pyrate-limiter's "
        "`try_acquire_async` on the Limiter it is given, here over an async RedisBucket, whose script "
        "does not count members stamped later than the request's own time. The state machine met it "
        "with tasks taking turns: a request that read its clock, then two others that read theirs later "
        "and ran first; all three passed a limit of 2.",
        documented=False,
        reproduction="tests/scoreboard/reproductions/fastapi_limiter_stale_stamp.py",
        tracker=f"{NOT_IN_TRACKER} (long2ice/fastapi-limiter; the cause is pyrate-limiter's, see its "
        "finding)",
        sometimes="the state machine meets it in the full board's 200 interleavings (every seed tried), "
        "seldom in --quick's 25: it needs a request that read its clock to be passed by two later ones",
        met_by=("schedule",),
        promise=Promise(
            LIBRARY,
            "FastAPI-Limiter is a rate limiting tool for fastapi routes, powered by pyrate-limiter. ... "
            "RedisBucket stores one sorted-set member per consumed unit for exact sliding-window checks.",
            "https://github.com/long2ice/fastapi-limiter/blob/master/README.md",
        ),
        refs=("https://github.com/vutran1710/PyrateLimiter/issues/172",),
    ),
)


def expected_failures(library: str) -> dict[str, Finding]:
    """The properties `library` is expected to break, with the finding for each."""
    return {f.prop: f for f in FINDINGS if f.library == library}
