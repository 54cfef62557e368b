"""What each scoreboard library does not promise, so a row of passes is not read as more than it
says: a limitation it documents (True), or one seen only in its source (False).
"""

from __future__ import annotations

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
    "pottery-nextid": (
        ("\"there may be 'holes' in the sequence of IDs\" (ids are not 1..n: gap-free is not claimed)", True),
        (
            "judged by a burst of clients only: the scheduler's state machines have no ID-generator family yet",
            False,
        ),
    ),
    "walrus": (
        ("no fencing token, no extend, no acquire timeout", True),
        ('the event list of each lock "persists indefinitely" unless `clear()` removes it', True),
    ),
    "redlock-py": (
        ("no fencing token, no extend", True),
        ("validity is read off `time.time()`, the wall clock, which contend's clock checks move", False),
        (
            "a quorum reached with some servers failing raises MultipleRedlockException and leaves "
            "the keys it set until their TTL (`Redlock.lock`)",
            False,
        ),
    ),
    "redlock": (
        ("no fencing token, no extend", True),
        ("validity is read off `datetime.utcnow()`, the wall clock", False),
    ),
    "redis-lock-py": (
        ("no fencing token", True),
        (
            "`extend(n)` adds n seconds to what is left (`TTL` + n, whole seconds, so up to a second "
            "less than asked): not contend's extend, not judged",
            False,
        ),
    ),
    "redis-lock-py-spin": (("no fencing token", True),),
    "celery-once": (
        ("no fencing token, no extend", True),
        ("one Redis client per process, made from the settings' URL (a module global)", False),
    ),
    "celery-singleton": (
        ("no fencing token, no extend, no blocking acquire (a duplicate is refused)", True),
        ("without `lock_expiry` (the default) the lock never expires", True),
    ),
    "cashews": (
        ("no fencing token, no extend, no acquire timeout", True),
        (
            "with errors suppressed (the default), a lock whose server does not answer is entered "
            'without being held: "if redis unavailable ... we will have a brake lock"',
            True,
        ),
    ),
    "redis-semaphore": (
        ("no fencing token, no extend", True),
        (
            "tokens are the numbers 0..count-1, not a fresh value per grant, so a holder cannot tell "
            "its grant from a later one of the same token",
            False,
        ),
        (
            "a waiter blocked in BLPOP does not reclaim stale tokens: only an acquire that starts "
            "does (`release_stale_locks`)",
            False,
        ),
    ),
    "django-redis": (("no fencing token: it is redis-py's Lock", True),),
    "dogpile-cache": (
        ("no fencing token, no extend (its mutex wrapper has acquire and release only)", True),
        ("leases are whole seconds (`lock_timeout: integer`)", True),
    ),
    "valkey": (
        ('no fencing token: "It\'s left to the user to resolve deadlock issues" (valkey/lock.py)', True),
        ("judged over redis-py's connections: valkey's own connection classes are not driven", False),
    ),
    "tooz": (
        ("no fencing token; `heartbeat()` renews for a full `lock_timeout` only, not judged as extend", True),
        ("leases are whole seconds (`int(lock_timeout)`)", False),
    ),
    "celery-redbeat": (
        ("no fencing token", True),
        (
            "`acquire_distributed_beat_lock` blocks until it holds the lock (no try, no timeout): the "
            "row's tries and timeouts are redis-py's, on the lock built the same way",
            False,
        ),
    ),
    "beaker": (
        ("no fencing token, no extend", True),
        (
            "the owner is the machine, process and thread (`_get_owner_id`): two holders in one thread "
            "are one owner, and a thread that reuses a dead thread's id owns its lock",
            False,
        ),
        ("a waiting acquire has no timeout (`acquire_write_lock(wait=True)` retries every 0.2 s)", False),
    ),
    "huey-lock": (
        ("no fencing token, no extend, no blocking acquire (a held lock raises TaskLockedException)", True),
        (
            "without `ttl` the lock never expires: a worker that dies holding it leaves it until "
            "`flush_locks()` (the consumer runs it when it starts)",
            True,
        ),
        ("`release` is `clear`: an HDEL of the lock, whoever holds it", False),
    ),
    "huey-queue": (
        (
            "no acknowledgement, no visibility lease: a task popped by a consumer that dies is lost "
            "(so no-loss is not claimed)",
            False,
        ),
    ),
    "rq": (
        (
            "no visibility lease: a job whose worker dies is failed by RQ's maintenance (its "
            "abandoned-job handling), not run again, so no-loss is not claimed",
            True,
        ),
        ("every queue is added to RQ's global set `rq:queues`, outside contend's namespace", False),
    ),
    "arq": (
        ("no nack and no extend: a consumer cannot give a job back or lengthen its lease", False),
        (
            "a job is started again at most `max_tries` times (5 by default; this row sets 1000), then "
            "failed: a job whose workers keep dying is not run for ever",
            True,
        ),
        (
            "its keys (`arq:job:<id>`, `arq:in-progress:<id>`, `arq:retry:<id>`, `arq:abort`) are "
            "global, outside contend's namespace (only the queue's sorted set is named after it)",
            False,
        ),
        (
            "pins redis-py below 6 (python-arq/arq #454, open): judged beside contend's redis-py, "
            "installed with --no-deps",
            False,
        ),
    ),
    "arq-unique": (
        (
            "uniqueness lasts while the job or its kept result exists: with `keep_result` > 0 (the "
            "default, an hour) an id stays taken after its job ran (python-arq/arq #167, #222); this "
            "row sets keep_result=0",
            True,
        ),
        (
            "no lease of the enqueuer's: a job nobody runs keeps its id for its `_expires` (a day by "
            "default), so crash liveness is not claimed",
            False,
        ),
    ),
    "limits-fixed-window": (
        (
            'a fixed window lets up to twice the limit through around its edge: "Burst traffic that '
            'bypasses the rate limit may occur at window boundaries" (README)',
            True,
        ),
        ("windows are whole seconds (`RateLimitItemPerSecond`, EXPIRE)", True),
        ("a refused hit is counted: a client that keeps hitting a full window keeps it full", True),
    ),
    "limits-moving-window": (
        (
            "the times in the log are `time.time()` on the client: clock-skew-safe is not claimed, "
            "and a client that stalls between reading its clock and its script logs its hit as older "
            "than it is (not met in the state machine's runs here)",
            False,
        ),
        ("windows are whole seconds; the log's EXPIRE is the window's whole seconds", True),
    ),
    "limits-sliding-window-counter": (
        (
            '"approximates the moving window" (README): the previous window counts by a weight, as if '
            "its hits were spread evenly, so neither a bound on what it admits in a window nor an exact "
            "refusal is claimed or judged; only that its counters expire",
            True,
        ),
    ),
    "limits-aio-fixed-window": (
        ("as the synchronous fixed window (the same script)", True),
        (
            'the async storage\'s default implementation is coredis; the row uses the documented "redispy"',
            True,
        ),
    ),
    "limits-aio-moving-window": (
        ("as the synchronous moving window (times from the client's clock)", False),
    ),
    "limits-aio-sliding-window-counter": (
        ("as the synchronous sliding window counter (an approximation)", True),
    ),
    "pyrate-limiter": (
        (
            "the sorted set never expires: entries outside every window are removed by a leaker (a "
            "thread, or a task on the client's loop) the Limiter schedules, so no-stuck-key is not "
            "claimed; the row turns the leaker off (`schedule_leak=False`), which no decision reads",
            True,
        ),
        (
            "times are the client's (`RedisBucket.now()`): the README asks distributed workers to "
            "override `now()` with a shared clock, so clock-skew-safe is not claimed",
            True,
        ),
        ("`try_acquire` blocks by default until there is room; the row uses `blocking=False`", True),
    ),
    "fastapi-limiter": (
        (
            "since 0.2.0 a wrapper of a pyrate-limiter `Limiter` (its README's examples use an in-memory "
            "bucket): what Redis sees is pyrate-limiter's, with its limitations",
            True,
        ),
        ("a request costs one unit: a hit of a larger cost is the Limiter's own `try_acquire_async`", False),
    ),
    "python-redis-rate-limit": (
        ("windows are whole seconds (`expire`, EXPIRE); the default pool is 127.0.0.1:6379/0", True),
        ('a refused hit is counted (`get_usage` "could be greater than the maximum")', True),
        ("a cost above `max_requests` raises ValueError rather than being refused", False),
    ),
    "dramatiq": (
        ("no fencing token, no extend, no blocking acquire (the actor is retried)", True),
        ("every acquire and release resets the counter's TTL: one busy key never expires", False),
    ),
}
