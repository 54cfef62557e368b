"""The scoreboard's rate-limiter rows (issue 43): `limits` (fixed window, moving window, sliding
window counter; sync and async), pyrate-limiter's Redis bucket, fastapi-limiter and
python-redis-rate-limit, each judged by the rate-limiter battery on what it documents.

A limiter that takes its times from the client's clock (the `limits` moving window,
pyrate-limiter) does not claim clock-skew-safe, which none of them documents; pyrate-limiter's
sorted set has no expiry by design (its leaker trims it), so it does not claim no-stuck-key; the
sliding window counter documents an approximation of the moving window, so it claims no bound on
what it admits (and no exact refusal), only that its counters reset.
"""

from __future__ import annotations

from contend.impl.catalog import CLOCK_SKEW_SAFE, FIXED_WINDOW, NO_FALSE_REFUSAL, NO_STUCK_KEY, SLIDING_LOG
from contend.scoreboard.library import Library, Quote

FAMILY = "rate_limiter"
LIMITS = "limits==5.8.0"
PYRATE = "pyrate-limiter==4.5.1"
#: Where `limits` documents its strategies: README.rst, its distribution's long description.
LIMITS_README = "README.rst (the distribution's METADATA)"

FIXED = Quote(
    "When the first request arrives, a window is started for a fixed duration (e.g., for a rate limit "
    "of 10 requests per minute the window expires in 60 seconds from the first request). All requests "
    "in that window increment the counter and when the window expires, the counter resets.",
    LIMITS_README,
)
MOVING = Quote(
    "This strategy adds each request's timestamp to a log if the nth oldest entry (where n is the "
    "limit) is either not present or is older than the duration of the window",
    LIMITS_README,
)
SLIDING = Quote(
    "This strategy approximates the moving window while using less memory by maintaining two "
    "counters ... If weighted_count is below the limit, the request is allowed.",
    LIMITS_README,
)
ASYNC = Quote("The library provides identical APIs for use in sync and async codebases.", LIMITS_README)
PYRATE_QUOTES = (
    Quote(
        "RedisBucket stores one sorted-set member per consumed unit for exact sliding-window checks.",
        "README.md (the distribution's METADATA)",
    ),
    Quote(
        "Precise rolling window: admit while each rate's last ``interval`` stays under its limit.",
        "pyrate_limiter/abstracts/algorithm.py (SlidingWindowLog, the default)",
    ),
    Quote(
        "We are not using redis' built-in TIME since it is non-deterministic - In distributed "
        "context, use local server time or a remote time server",
        "pyrate_limiter/buckets/redis_bucket.py (RedisBucket)",
    ),
)

#: Claims per `limits` strategy: the fixed window and the sliding counter run on the server's
#: clock (EXPIRE, PTTL); the moving window's times are the client's `time.time()`.
FIXED_CLAIMS = frozenset({FIXED_WINDOW, NO_STUCK_KEY, NO_FALSE_REFUSAL, CLOCK_SKEW_SAFE})
MOVING_CLAIMS = frozenset({SLIDING_LOG, FIXED_WINDOW, NO_STUCK_KEY, NO_FALSE_REFUSAL})
SLIDING_CLAIMS = frozenset({NO_STUCK_KEY})
#: pyrate-limiter's log: exact, on the client's clock, without expiry.
PYRATE_CLAIMS = frozenset({SLIDING_LOG, FIXED_WINDOW, NO_FALSE_REFUSAL})


def _limits_row(
    strategy: str, words: str, asynchronous: bool, claims: frozenset[str], quote: Quote
) -> Library:
    module = "limits_aio" if asynchronous else "limits_redis"
    storage = (
        '`limits.aio.storage.RedisStorage("async+redis://", implementation="redispy", connection_pool=..., '
        "key_prefix=key)`"
        if asynchronous
        else '`limits.storage.RedisStorage("redis://", connection_pool=..., key_prefix=key)`'
    )
    return Library(
        f"limits-{'aio-' if asynchronous else ''}{strategy.replace('_', '-')}",
        f"limits {'async ' if asynchronous else ''}{words}",
        "limits",
        f"contend.adapters.{module}:{strategy}",
        claims=claims,
        family=FAMILY,
        configuration=f"{storage}, `RateLimitItemPerSecond(limit, window_ms / 1000)`, "
        f"`{''.join(w.title() for w in strategy.split('_'))}RateLimiter(storage).hit(item, cost=cost)`",
        requirements=(LIMITS,),
        quotes=(quote, ASYNC) if asynchronous else (quote,),
    )


LIMITER_ROWS: tuple[Library, ...] = (
    *(
        _limits_row(strategy, words, asynchronous, claims, quote)
        for asynchronous in (False, True)
        for strategy, words, claims, quote in (
            ("fixed_window", "fixed window", FIXED_CLAIMS, FIXED),
            ("moving_window", "moving window", MOVING_CLAIMS, MOVING),
            ("sliding_window_counter", "sliding window counter", SLIDING_CLAIMS, SLIDING),
        )
    ),
    Library(
        "pyrate-limiter",
        "pyrate-limiter RedisBucket",
        "pyrate-limiter",
        "contend.adapters.pyrate_limiter:factory",
        claims=PYRATE_CLAIMS,
        family=FAMILY,
        configuration="`Limiter(SingleBucketFactory(RedisBucket.init([Rate(limit, window_ms)], client, key), "
        "schedule_leak=False))`, `try_acquire(key, weight=cost, blocking=False)`",
        requirements=(PYRATE,),
        quotes=PYRATE_QUOTES,
    ),
    Library(
        "fastapi-limiter",
        "fastapi-limiter over a pyrate-limiter async RedisBucket",
        "fastapi-limiter",
        "contend.adapters.fastapi_limiter:factory",
        claims=PYRATE_CLAIMS,
        family=FAMILY,
        configuration="`WebSocketRateLimiter(limiter=Limiter(SingleBucketFactory(await RedisBucket.init("
        "[Rate(limit, window_ms)], client, key), schedule_leak=False)), identifier=...)` on redis.asyncio: a hit is one call (HTTPException 429: refused); "
        "a larger cost is the Limiter's `try_acquire_async(key, weight=cost, blocking=False)`",
        requirements=("fastapi-limiter==0.2.0", PYRATE),
        quotes=(
            Quote(
                "FastAPI-Limiter is a rate limiting tool for fastapi routes, powered by pyrate-limiter.",
                "README.md (the distribution's METADATA)",
            ),
            Quote(
                "`limiter`: A `pyrate_limiter.Limiter` instance that defines the rate limiting rules.",
                "README.md (the distribution's METADATA)",
            ),
            PYRATE_QUOTES[0],
        ),
    ),
    Library(
        "python-redis-rate-limit",
        "python-redis-rate-limit RateLimit",
        "python-redis-rate-limit",
        "contend.adapters.python_redis_rate_limit:factory",
        claims=FIXED_CLAIMS,
        family=FAMILY,
        configuration='`RateLimit(resource=key, client="contend", max_requests=limit, expire=window_ms / 1000, '
        "redis_pool=...)`, `increment_usage(increment_by=cost)` (TooManyRequests: refused)",
        requirements=("python-redis-rate-limit==0.0.10",),
        quotes=(
            Quote(
                "This lib offers an abstraction of a Rate Limit algorithm implemented on top of Redis >= 2.6.0.",
                "README.rst (the distribution's METADATA)",
            ),
            Quote(
                "Example: 10 requests per second ... max_requests=10",
                "README.rst (the distribution's METADATA)",
            ),
            Quote(
                ":param expire: seconds to wait before resetting counters (i.e. ‘60’)",
                "redis_rate_limit/__init__.py (RateLimit.__init__)",
            ),
        ),
    ),
)
