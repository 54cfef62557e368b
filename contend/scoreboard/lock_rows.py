"""The scoreboard's lock rows: each lock library in one documented configuration.

See contend.scoreboard.library for what a row holds; contend.scoreboard.libraries puts these
first on the board, before the rows of the other families.
"""

from __future__ import annotations

from contend.impl.catalog import (
    CLOCK_SKEW_SAFE,
    MUTUAL_EXCLUSION,
    SAFE_RELEASE,
)
from contend.scoreboard.library import Library, Quote

LOCK_ROWS: tuple[Library, ...] = (
    Library(
        "redis-py",
        "redis-py Lock",
        "redis",
        "contend.adapters.redis_py:factory",
        configuration="`client.lock(name, timeout=ttl, sleep=0.005)`, thread-local token (the default)",
        quotes=(
            Quote(
                "a Lua script that checks the token so that a client would not be able to release "
                "another's lock; thread_local so that another thread cannot either",
                "redis/lock.py (Lock docstring, paraphrased: the token and thread_local paragraphs)",
            ),
        ),
    ),
    Library(
        "redis-py-asyncio",
        "redis-py asyncio Lock",
        "redis",
        "contend.adapters.redis_py_async:factory",
        configuration="`redis.asyncio` client, `client.lock(name, timeout=ttl, sleep=0.005)`: coroutines, "
        "judged by the async battery (cancellation included)",
        quotes=(Quote("A shared, distributed Lock. Using Redis for locking", "redis/asyncio/lock.py"),),
    ),
    Library(
        "python-redis-lock",
        "python-redis-lock",
        "python-redis-lock",
        "contend.adapters.python_redis_lock:factory",
        configuration="`redis_lock.Lock(client, name, expire=ttl)`, whole seconds",
        requirements=("python-redis-lock==4.0.1",),
        quotes=(
            Quote("Lock context manager implemented via redis SETNX/BLPOP.", "README.rst"),
            Quote("If set, the lock will expire after that many seconds", "redis_lock/__init__.py (Lock)"),
        ),
    ),
    Library(
        "python-redis-lock-renewal",
        "python-redis-lock, auto_renewal",
        "python-redis-lock",
        "contend.adapters.python_redis_lock:auto_renewal_factory",
        configuration="`redis_lock.Lock(client, name, expire=ttl, auto_renewal=True)`",
        requirements=("python-redis-lock==4.0.1",),
        quotes=(
            Quote(
                "If set to True, Lock will automatically renew the lock so that it doesn't expire for "
                "as long as the lock is held",
                "redis_lock/__init__.py (Lock, auto_renewal)",
            ),
        ),
    ),
    Library(
        "pottery",
        "pottery Redlock, 1 master",
        "pottery",
        "contend.adapters.pottery:factory",
        configuration="`Redlock(key=name, masters={client}, auto_release_time=ttl)`",
        requirements=("pottery==3.0.1",),
        quotes=(
            Quote(
                "This algorithm safely and reliably provides a mutually-exclusive locking primitive to "
                "protect a resource shared across threads, processes, and even machines, without a "
                "single point of failure.",
                "pottery/redlock.py (Redlock)",
            ),
        ),
    ),
    Library(
        "pottery-3",
        "pottery Redlock, 3 masters",
        "pottery",
        "contend.adapters.pottery:three_masters",
        masters=3,
        configuration="`Redlock(key=name, masters={three servers}, auto_release_time=ttl)`",
        requirements=("pottery==3.0.1",),
        quotes=(
            Quote(
                "Redlock is a distributed lock ... a majority of Redis masters",
                "pottery/redlock.py (Redlock, abridged)",
            ),
        ),
    ),
    Library(
        "sherlock",
        "sherlock RedisLock",
        "sherlock",
        "contend.adapters.sherlock:factory",
        configuration="`RedisLock(name, client=client, expire=ttl)`, whole seconds",
        requirements=("sherlock==0.4.1",),
        quotes=(
            Quote("Distributed inter-process locks with a choice of backend", "README.rst"),
            Quote("API similar to standard library's threading.Lock", "README.rst"),
        ),
    ),
    Library(
        "sherlock-no-expiry",
        "sherlock RedisLock, expire=None",
        "sherlock",
        "contend.adapters.sherlock:never_expire_factory",
        claims=frozenset({MUTUAL_EXCLUSION, SAFE_RELEASE}),
        configuration='`RedisLock(name, client=client, expire=None)`: the README\'s "never expire locks"',
        requirements=("sherlock==0.4.1",),
        quotes=(Quote("never expire locks", "README.rst (expire=None)"),),
    ),
    Library(
        "portalocker",
        "portalocker RedisLock (Pub/Sub)",
        "portalocker",
        "contend.adapters.portalocker:factory",
        claims=frozenset({MUTUAL_EXCLUSION, SAFE_RELEASE, CLOCK_SKEW_SAFE}),
        configuration="`RedisLock(name, connection=client)`, `acquire(timeout=0, fail_when_locked=True)` "
        "for a try: no lease",
        requirements=("portalocker[redis]==4.4.2",),
        not_run="not judged: its lock is a Pub/Sub subscription with no lease, kept by a reader thread of "
        "its own and decided by answers awaited in real time (`unavailable_timeout`, 1 s), so contend's "
        "lease model does not apply (its model check expires leases portalocker does not have) and the "
        "scheduler does not control it (on the same schedule it behaved differently: Hypothesis's "
        "FlakyStrategyDefinition; 8 clients × 25 locked increments did not finish in 30 s). The "
        "adapter (contend/adapters/portalocker.py, with `interrupt_on_lost=False`: by default a lost "
        "lock raises KeyboardInterrupt in the main thread) is kept for trying it by hand",
        quotes=(
            Quote(
                "`RedisLock` keeps the lock in a *subscription* rather than in a key. A holder subscribes "
                "to the lock channel and a background thread keeps reading from it, so ownership is a "
                "property of a live connection.",
                "portalocker/redis.py",
            ),
            Quote(
                "Shared readers hold the lock together, an exclusive writer holds it alone.",
                "portalocker/redis.py",
            ),
        ),
    ),
    Library(
        "aioredlock",
        "aioredlock Aioredlock (asyncio)",
        "aioredlock",
        "",
        requirements=("aioredlock==0.7.3",),
        quotes=(Quote("The asyncio redlock algorithm implementation", "README.rst (aioredlock)"),),
        not_run="not judged: aioredlock talks to Redis through aioredis 1.3 (its own connections and "
        "protocol parser), not redis-py, and contend's scheduler, crashes and cancellations act on "
        "redis-py's connections; aioredis 1.3 is archived (its successor is redis.asyncio)",
    ),
    Library(
        "walrus",
        "walrus Lock",
        "walrus",
        "contend.adapters.walrus:factory",
        configuration="`Database(...).lock(name, ttl=ttl_ms)`, milliseconds",
        requirements=("walrus==0.9.8",),
        quotes=(
            Quote("The lock uses Lua scripts to ensure the atomicity of its operations.", "walrus/lock.py"),
            Quote(
                "If the lock was initialized with a ``ttl``, then the lock will be released automatically "
                "after the given number of milliseconds.",
                "walrus/lock.py (Lock.acquire)",
            ),
        ),
    ),
    Library(
        "redlock-py",
        "redlock-py Redlock, 1 master",
        "redlock-py",
        "contend.adapters.redlock_py:factory",
        configuration="`Redlock([client]).lock(name, ttl_ms)`, its 3 tries 0.2 s apart",
        requirements=("redlock-py==1.0.8",),
        quotes=(
            Quote(
                "This python lib implements the Redis-based distributed lock manager algorithm "
                "[described in this blog post](http://antirez.com/news/77).",
                "README.md",
            ),
            Quote("key, a random value which is used to safe reclaim the lock.", "README.md"),
        ),
    ),
    Library(
        "redlock",
        "redlock RedLock, 1 master",
        "redlock",
        "contend.adapters.redlock:factory",
        configuration="`RedLock(name, connection_details=[client], ttl=ttl_ms)`, its 3 tries",
        requirements=("redlock==1.2.0",),
        quotes=(
            Quote("A distributed lock implementation based on Redis.", "redlock/lock.py (RedLock)"),
            Quote("use the lua script to release the lock in a safe way", "redlock/lock.py (release_node)"),
        ),
    ),
    Library(
        "redis-lock-py",
        "redis-lock-py RedisLock (Pub/Sub)",
        "redis-lock-py",
        "contend.adapters.redis_lock_py:factory",
        configuration="`RedisLock(client, name, blocking_timeout=t, expire_timeout=ttl)`, whole seconds",
        requirements=("redis-lock-py==1.3.0",),
        may_be_inconclusive="a waiter's Pub/Sub wait (`get_message(timeout=...)`) runs on the real clock, "
        "which the scheduler does not control: the schedule check may find it behaving differently "
        "on the same schedule (Hypothesis's FlakyStrategyDefinition) and say so",
        quotes=(
            Quote("Ensure atomicity by using the SETNX operation.", "README.md (Features)"),
            Quote(
                "Includes a forced timeout mechanism to prevent infinite loops when attempting to acquire "
                "the lock.",
                "README.md (Features)",
            ),
            Quote("expire_timeout: The maximum lifetime of acquired lock.", "redis_lock/base.py"),
        ),
    ),
    Library(
        "redis-lock-py-spin",
        "redis-lock-py RedisSpinLock",
        "redis-lock-py",
        "contend.adapters.redis_lock_py:spin_factory",
        configuration="`RedisSpinLock(client, name, blocking_timeout=t, expire_timeout=ttl)`, whole seconds",
        requirements=("redis-lock-py==1.3.0",),
        quotes=(Quote("expire_timeout: The maximum lifetime of acquired lock.", "redis_lock/base.py"),),
    ),
    Library(
        "celery-once",
        "celery-once Redis backend",
        "celery-once",
        "contend.adapters.celery_once:factory",
        configuration="`raise_or_lock(key, timeout=ttl)` then `clear_lock(key)`, whole seconds",
        requirements=("celery-once==3.0.1",),
        quotes=(
            Quote(
                "Allows you to prevent multiple execution and queuing of celery tasks.",
                "README.rst (summary)",
            ),
            Quote(
                "Once the task completes (or ends due to an exception) the lock will clear. If an attempt "
                "is made to run the task again before it completes an ``AlreadyQueued`` exception will be "
                "raised.",
                "README.rst",
            ),
            Quote(
                "By default, the tasks and the key expire after 60 minutes.",
                "celery_once/backends/redis.py (raise_or_lock)",
            ),
        ),
    ),
    Library(
        "celery-singleton",
        "celery-singleton Redis backend",
        "celery-singleton",
        "contend.adapters.celery_singleton:factory",
        configuration="`lock(key, task_id, expiry=ttl)` then `unlock(key)`, whole seconds",
        requirements=("celery-singleton==0.3.1",),
        quotes=(
            Quote("Prevent duplicate celery tasks", "setup.py (description)"),
            Quote(
                "return not not self.redis.set(lock, task_id, nx=True, ex=expiry)",
                "celery_singleton/backends/redis.py",
            ),
        ),
    ),
    Library(
        "cashews",
        "cashews lock (asyncio)",
        "cashews",
        "contend.adapters.cashews:factory",
        configuration="`backend.lock(key, expire=ttl, wait=..., check_interval=0.005)`, coroutines, "
        "errors suppressed (its default)",
        requirements=("cashews==7.6.0",),
        quotes=(
            Quote(
                'if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1])',
                "cashews/backends/redis/backend.py (_UNLOCK)",
            ),
            Quote(
                "lock = await self.set_lock(key, identifier, expire=expire)", "cashews/backends/interface.py"
            ),
        ),
    ),
    Library(
        "django-redis",
        "django-redis cache.lock",
        "django-redis",
        "contend.adapters.django_redis:factory",
        configuration="`cache.lock(key, timeout=ttl, client=client)` of django-redis's `RedisCache` "
        "(its default `sleep`, 0.1 s)",
        requirements=("django-redis==7.0.0", "django==5.2.8"),
        quotes=(
            Quote(
                "It also supports the Redis ability to create Redis distributed named locks. The Lock "
                "interface is identical to the ``threading.Lock`` so you can use it as replacement.",
                "README.rst (Locks)",
            ),
        ),
    ),
    Library(
        "dogpile-cache",
        "dogpile.cache Redis distributed lock",
        "dogpile.cache",
        "contend.adapters.dogpile_cache:factory",
        configuration="`RedisBackend({'distributed_lock': True, 'thread_local_lock': False, "
        "'lock_timeout': ttl, ...}).get_mutex(key)`, whole seconds, its default `lock_sleep` (0.1 s)",
        requirements=("dogpile.cache==1.5.0",),
        quotes=(
            Quote(
                "distributed_lock: boolean, when True, will use a redis-lock as the dogpile lock. Use "
                "this when multiple processes will be talking to the same redis instance.",
                "dogpile/cache/backends/redis.py (RedisBackend)",
            ),
            Quote(
                "lock_timeout: integer, number of seconds after acquiring a lock that Redis should "
                "expire it.",
                "dogpile/cache/backends/redis.py (RedisBackend)",
            ),
        ),
    ),
    Library(
        "valkey",
        "valkey Lock (over redis-py's client)",
        "valkey",
        "contend.adapters.valkey_lock:factory",
        configuration="`valkey.lock.Lock(client, name, timeout=ttl, sleep=0.005)`, its round trips sent "
        "through a redis-py client (contend's scheduler drives redis-py's connections)",
        requirements=("valkey==6.2.0",),
        quotes=(
            Quote(
                "A shared, distributed Lock. Using Valkey for locking allows the Lock to be shared "
                "across processes and/or machines.",
                "valkey/lock.py (Lock)",
            ),
            Quote("``timeout`` indicates a maximum life for the lock in seconds.", "valkey/lock.py (Lock)"),
        ),
    ),
    Library(
        "tooz",
        "tooz Redis driver lock",
        "tooz",
        "contend.adapters.tooz_lock:factory",
        configuration="`RedisLock(coordinator, client, name, lock_timeout)` as `get_lock` builds it, whole "
        "seconds",
        requirements=("tooz==9.1.0",),
        quotes=(
            Quote(
                "Redis provides a few nice benefits that act as a poormans zookeeper. It **is** fully "
                "functional and implements all of the coordination driver API(s).",
                "tooz/drivers/redis.py (RedisDriver)",
            ),
        ),
    ),
    Library(
        "celery-redbeat",
        "celery-redbeat beat lock",
        "celery-redbeat",
        "contend.adapters.redbeat:factory",
        configuration="`acquire_distributed_beat_lock` (redis-py's lock with redbeat's extend-to script, "
        "`lock_timeout`=ttl in whole seconds, `max_interval` a fifth of it), extended as a tick does, "
        "released as `close()` does",
        requirements=("celery-redbeat==2.4.2",),
        quotes=(
            Quote("RedBeat uses a distributed lock to prevent multiple instances running.", "README.rst"),
            Quote(
                "redbeat_lock_timeout: Unless refreshed the lock will expire after this time, in seconds.",
                "README.rst (Configuration)",
            ),
        ),
    ),
    Library(
        "beaker",
        "Beaker RedisSynchronizer",
        "beaker",
        "contend.adapters.beaker_lock:factory",
        configuration="`RedisSynchronizer(key, client)`'s write lock, `LOCK_EXPIRATION` = ttl (whole "
        "seconds; 900 by default)",
        requirements=("beaker==1.14.1",),
        quotes=(
            Quote(
                "Synchronizer based on redis. ... This Synchronizer only supports 1 reader or 1 writer at "
                "time, not concurrent readers.",
                "beaker/ext/redisnm.py (RedisSynchronizer)",
            ),
        ),
    ),
    Library(
        "huey-lock",
        "huey lock_task",
        "huey",
        "contend.adapters.huey_lock:factory",
        claims=frozenset({MUTUAL_EXCLUSION, SAFE_RELEASE}),
        configuration="`RedisHuey(name, connection_pool=...).lock_task(name)`, no `ttl` (the default: it "
        "never expires); a held lock raises TaskLockedException, retried every 5 ms for a blocking acquire",
        requirements=("huey==3.5.4",),
        quotes=(
            Quote(
                "Utilize the Storage key/value APIs to implement simple locking.", "huey/api.py (TaskLock)"
            ),
            Quote(
                "Atomically write data only if the key is not already set.",
                "huey/storage.py (BaseStorage.put_if_empty)",
            ),
        ),
    ),
    Library(
        "aiocache",
        "aiocache RedLock, OptimisticLock (asyncio)",
        "aiocache",
        "",
        requirements=("aiocache[redis]==0.12.3",),
        quotes=(
            Quote(
                "This locking has some limitations and shouldn't be used in situations where consistency "
                "is critical. Those locks are aimed for performance reasons where failing on locking from "
                "time to time is acceptable. TLDR: do NOT use this if you need real resource exclusion.",
                "aiocache/lock.py (RedLock)",
            ),
        ),
        not_run="not judged: `RedLock` does not say whether it holds the lock (`async with RedLock(...)` "
        'waits at most the lease for a holder, then goes on, held or not: "If the lease expires and '
        "there are calls waiting, all of them will pass\"), so contend's lock protocol (an acquire that "
        "answers whether it holds) has nothing to judge; `OptimisticLock` is a compare-and-set on one "
        "cache key, which no family of contend's judges yet",
    ),
)
