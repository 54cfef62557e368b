"""The one registry of implementations: what each claims and what it is known to violate.

An implementation with any known violation is KNOWN-BAD. It is kept on purpose
so contend can keep proving that it catches it; never "fix" one. This is the
only place that says which implementations are known-bad.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis

from contend.impl import registry as reg
from contend.impl.locks import (
    async_early_clear,
    async_token,
    exists_then_set,
    fenced,
    incr_counter,
    lock_with_timeout,
    redis_objects,
    redlock,
    semaphore,
    set_nx_ex,
    setnx_del,
    setnx_getset,
    single_flight,
    token,
)
from contend.impl.queue import async_stream, lease_list, pop, stream, value_list
from contend.impl.rate_limiter import fixed_window, gcra, sliding_log
from contend.impl.registry import async_check_then_set, async_lua
from contend.impl.transactions import (
    LockFirstBank,
    LuaBank,
    NoWatchBank,
    SeparateReadsBank,
    WatchBank,
    WatchSomeBank,
)

# Properties a registry can claim (checked by contend's registry battery).
UNIQUE_IDS = "unique-ids"  # distinct names get distinct ids
STABLE_IDS = "stable-ids"  # the same name always gets the same id
GAP_FREE = "gap-free"  # ids are exactly 1..n
TABLES_AGREE = "tables-agree"  # forward and inverse tables are mirror images
NO_SPURIOUS_ERRORS = "no-spurious-errors"  # concurrent operations never fail (registration, a lock's acquire)
REGISTRY_PROPERTIES = frozenset({UNIQUE_IDS, STABLE_IDS, GAP_FREE, TABLES_AGREE, NO_SPURIOUS_ERRORS})

# Properties a lock or semaphore can claim (checked by contend's lock batteries).
MUTUAL_EXCLUSION = "mutual-exclusion"  # at most one holder (limit, for a semaphore) while leases are valid
CLOCK_SKEW_SAFE = "clock-skew-safe"  # mutual exclusion does not depend on the clients' clocks agreeing
SAFE_RELEASE = "safe-release"  # a release or extend after expiry never frees or prolongs a successor's lease
CRASH_LIVENESS = "crash-liveness"  # a holder that dies at any round trip blocks others for about one TTL
FENCING = "fencing"  # every grant carries a larger token; a paused holder's late write is refused
FIFO = "fifo"  # waiters are granted in the order they asked
STALE_GRANT = "stale-grant"  # no grant is reported once the lease it took ran out before its last round trip
LOCK_PROPERTIES = frozenset(
    {MUTUAL_EXCLUSION, CLOCK_SKEW_SAFE, SAFE_RELEASE, CRASH_LIVENESS, FENCING, FIFO, STALE_GRANT}
)
#: What a lease (a lock or semaphore whose holder's hold runs out) claims unless it says otherwise.
LEASE_CLAIMS = frozenset({MUTUAL_EXCLUSION, CLOCK_SKEW_SAFE, SAFE_RELEASE, CRASH_LIVENESS, STALE_GRANT})

# Every implementation: its operations finish (no livelock, no deadlock) once the schedule lets them.
PROGRESS = "progress"

# Properties a single-flight can claim.
RUNS_ONCE = "runs-once"  # concurrent callers of one key run the function once
SHARED_RESULT = "shared-result"  # every concurrent caller, in any process, receives the leader's result
LEADER_FAILURE = "leader-failure"  # a leader that dies or raises frees its waiters with an error or a retry
SINGLE_FLIGHT_PROPERTIES = frozenset({RUNS_ONCE, SHARED_RESULT, LEADER_FAILURE})

# Properties a transaction (a bank: transfer and balances, issue 28) can claim.
SERIALIZABLE = "serializable"  # the conflict graph, in the order the server ran the commands, has no cycle
APPLIES_ONCE = "applies-once"  # money is conserved; each transfer applies once or not at all; none below zero
CONSISTENT_AUDIT = "consistent-audit"  # every audit sees a total some serial order produces
TRANSACTION_PROPERTIES = frozenset({SERIALIZABLE, APPLIES_ONCE, CONSISTENT_AUDIT})

# Properties a work queue can claim (issue 44): put, take with a visibility lease, ack.
NO_LOSS = "no-loss"  # every item put is delivered, again after a crash or a lapsed lease, until acked
NO_DOUBLE_DELIVERY = "no-double-delivery"  # no second consumer gets an item while a lease on it is valid
ACK_FINAL = "ack-final"  # an item acked by its holder is never delivered again
NO_PHANTOM = "no-phantom"  # a take returns only items that were put, as they were put
#: A queue that claims FIFO delivers items for the first time in the order their puts returned.
QUEUE_PROPERTIES = frozenset({NO_LOSS, NO_DOUBLE_DELIVERY, ACK_FINAL, NO_PHANTOM, FIFO})

# A user's own primitive (--kind operations, issue 43): its operations and a sequential specification.
LINEARIZABLE = "linearizable"  # some order consistent with real time gives every observed result
OPERATIONS_PROPERTIES = frozenset({LINEARIZABLE, NO_SPURIOUS_ERRORS})
# Properties a rate limiter can claim (issue 43): hit(cost) admits at most `limit` per `window_ms`.
# Never over-admits, by the algorithm it declares (one of the first three):
FIXED_WINDOW = "fixed-window"  # at most limit in each window (from its first hit, or epoch-aligned)
SLIDING_LOG = "sliding-log"  # at most limit in any interval of window_ms
TOKEN_BUCKET = "token-bucket"  # a bucket of limit tokens refilled at limit per window_ms (GCRA too)
NO_STUCK_KEY = "no-stuck-key"  # no key is left without an expiry after a crash or a lost reply
NO_FALSE_REFUSAL = "no-false-refusal"  # a hit is admitted when the window before it leaves room
OVER_ADMISSION_PROPERTIES = frozenset({FIXED_WINDOW, SLIDING_LOG, TOKEN_BUCKET})
#: Said after a fixed-window finding on a limiter that does not claim token-bucket.
BUCKET_HINT = (
    " (a token bucket or GCRA may admit this: if this limiter is one, declare it with "
    "--claim token-bucket --no-claim fixed-window)"
)
RATE_LIMITER_PROPERTIES = OVER_ADMISSION_PROPERTIES | {NO_STUCK_KEY, NO_FALSE_REFUSAL, CLOCK_SKEW_SAFE}

# Every implementation: bad input (ttl_ms <= 0, an empty key or name) raises before anything is written.
BAD_INPUT = "bad-input"
#: On a Redis Cluster: every command, script and transaction names keys of one hash slot.
CLUSTER_SLOTS = "cluster-slots"

# What kind of property each is, so reports tell a broken guarantee from an unclean refusal.
SAFETY = "safety"  # something bad never happens: two holders, a lost or shared id, a second computation
LIVENESS = "liveness"  # something good happens in the end: a crashed holder's lock frees, operations finish
HYGIENE = "hygiene"  # bad input is refused before anything is written
PROPERTY_KINDS: dict[str, str] = {
    UNIQUE_IDS: SAFETY,
    STABLE_IDS: SAFETY,
    GAP_FREE: SAFETY,
    TABLES_AGREE: SAFETY,
    NO_SPURIOUS_ERRORS: LIVENESS,
    MUTUAL_EXCLUSION: SAFETY,
    CLOCK_SKEW_SAFE: SAFETY,
    SAFE_RELEASE: SAFETY,
    CRASH_LIVENESS: LIVENESS,
    FENCING: SAFETY,
    FIFO: SAFETY,
    STALE_GRANT: SAFETY,
    PROGRESS: LIVENESS,
    RUNS_ONCE: SAFETY,
    SHARED_RESULT: SAFETY,
    LEADER_FAILURE: LIVENESS,
    SERIALIZABLE: SAFETY,
    APPLIES_ONCE: SAFETY,
    CONSISTENT_AUDIT: SAFETY,
    # Lost is a state, not a wait: an item neither acked nor anywhere a take can reach.
    NO_LOSS: SAFETY,
    NO_DOUBLE_DELIVERY: SAFETY,
    ACK_FINAL: SAFETY,
    NO_PHANTOM: SAFETY,
    LINEARIZABLE: SAFETY,
    FIXED_WINDOW: SAFETY,
    SLIDING_LOG: SAFETY,
    TOKEN_BUCKET: SAFETY,
    # A key without an expiry is a state, not a wait (it refuses for ever once full).
    NO_STUCK_KEY: SAFETY,
    NO_FALSE_REFUSAL: LIVENESS,
    BAD_INPUT: HYGIENE,
    CLUSTER_SLOTS: HYGIENE,
}
#: Each property in a user's words: what it promises.
PROPERTY_DESCRIPTIONS: dict[str, str] = {
    UNIQUE_IDS: "distinct names get distinct ids",
    STABLE_IDS: "a name keeps its id, and every client sees it once it is registered",
    GAP_FREE: "the ids handed out are exactly 1..n",
    TABLES_AGREE: "reverse(id) and count() agree with what registration returned",
    NO_SPURIOUS_ERRORS: "operations on valid input do not fail under concurrency",
    MUTUAL_EXCLUSION: "at most one holder (at most `limit` for a semaphore) while leases are valid",
    CLOCK_SKEW_SAFE: (
        "mutual exclusion holds when the clients' clocks disagree; a rate limiter neither over-admits nor "
        "refuses with room when they do"
    ),
    SAFE_RELEASE: "a release or extend after the lease expired never frees or prolongs another holder's lease",
    CRASH_LIVENESS: "a holder that dies at any round trip blocks the others for about one TTL, not for ever",
    FENCING: "every grant carries a larger fencing token than every grant before it",
    FIFO: (
        "waiters are granted in the order they asked; a queue's items are first delivered in the order "
        "their puts returned"
    ),
    STALE_GRANT: (
        "an acquire or extend that reports success holds a valid lease when it returns, even if its client "
        "was paused between its round trips for longer than the TTL"
    ),
    PROGRESS: (
        "every operation returns (no hang, livelock or deadlock) within a bound of virtual time, and a "
        "blocking acquire(timeout=t) within t plus one retry interval of its call, whatever happens meanwhile"
    ),
    RUNS_ONCE: "callers of one flight run the function once",
    SHARED_RESULT: "every caller of a flight gets the leader's result",
    LEADER_FAILURE: "a leader that dies or raises frees its waiters with an error or a retry",
    SERIALIZABLE: (
        "the conflict graph of the operations, in the order the server ran their commands, has no "
        "cycle (named for what it shows: G0, G1c, lost update, read skew, write skew)"
    ),
    APPLIES_ONCE: "money is conserved, each transfer applies once or not at all, no account goes below zero",
    CONSISTENT_AUDIT: "an audit of every account sees a total some serial order of the transfers produces",
    NO_LOSS: (
        "every item put is delivered, and delivered again after its consumer crashed, lost a reply or "
        "let its lease lapse, until it is acked"
    ),
    NO_DOUBLE_DELIVERY: "no take hands an item to a second consumer while another's lease on it is valid",
    ACK_FINAL: "an item acked by a consumer whose lease on it was valid is never delivered again",
    NO_PHANTOM: "a take returns only items that were put, as they were put",
    LINEARIZABLE: (
        "some order of the operations consistent with real time gives every result observed, run one at "
        "a time by the specification (the model, or the implementation itself on a fresh namespace)"
    ),
    FIXED_WINDOW: (
        "at most `limit` admitted in each window of window_ms (a window starting at its first hit, or at a "
        "multiple of window_ms on the clock)"
    ),
    SLIDING_LOG: "at most `limit` admitted in any interval of window_ms",
    TOKEN_BUCKET: (
        "at most `limit + d * limit / window_ms` admitted in any span d (a bucket of `limit` tokens "
        "refilled at `limit` per window_ms; GCRA too)"
    ),
    NO_STUCK_KEY: "no key of the limiter's is left without an expiry, whoever crashed or lost a reply",
    NO_FALSE_REFUSAL: (
        "a hit is admitted when every hit that could count against it in the window before it leaves room "
        "for its cost"
    ),
    BAD_INPUT: (
        "ttl_ms <= 0, an empty key or an empty name (for a bank: an amount <= 0, an unknown account, a "
        "transfer to the same account; for a queue: a take timeout < 0, an item it cannot serialise; for a "
        "rate limiter: limit < 1, window_ms <= 0) raises before anything is written"
    ),
    CLUSTER_SLOTS: "on a Redis Cluster, each command, script or transaction names keys of one hash slot",
}


def properties_of(family: str) -> frozenset[str]:
    """The properties an implementation of `family` can claim (what --claim accepts)."""
    return {
        "registry": REGISTRY_PROPERTIES,
        "lock": LOCK_PROPERTIES - {FIFO},
        "semaphore": LOCK_PROPERTIES,
        "single_flight": SINGLE_FLIGHT_PROPERTIES,
        "transaction": TRANSACTION_PROPERTIES,
        "queue": QUEUE_PROPERTIES,
        "operations": OPERATIONS_PROPERTIES,
        "rate_limiter": RATE_LIMITER_PROPERTIES,
    }[family]


@dataclass(frozen=True)
class Implementation:
    """One entry: how to build it, which model checks it, what it claims and violates."""

    name: str
    family: str
    factory: Callable[..., Any]
    model: str
    summary: str
    source: str = ""
    claims: frozenset[str] = field(default_factory=frozenset)
    violates: frozenset[str] = field(default_factory=frozenset)
    #: The factory takes a redis.asyncio client and its object's operations are coroutines.
    asynchronous: bool = False
    #: Why it runs on one server only (not on a Redis Cluster), or "" when it runs on a cluster:
    #: every command, script and transaction of it names keys of one hash slot.
    single_node: str = ""
    #: It spans this many independent masters (0: one server); its factory then takes the list of
    #: their clients: factory(clients, key, ttl_ms).
    masters: int = 0
    #: For a known-bad transaction: the anomaly (contend.history.isolation's name) it must be caught for.
    anomaly: str = ""

    @property
    def known_bad(self) -> bool:
        return bool(self.violates)


#: The seed's databases: counter, forward, inverse. Namespace cleanup must visit them.
SEED_LAYOUT_DBS = (15, 14, 13)


def _seed_layout(strategy: str) -> Callable[[redis.Redis, str], reg.Registerer]:
    """A factory putting the seed's three databases (15, 14, 13) on the client's server."""

    def factory(client: redis.Redis, namespace: str) -> reg.Registerer:
        return reg.Registerer(
            "count", *SEED_LAYOUT_DBS, strategy=strategy, prefix=f"{namespace}:", client=client
        )

    factory.__name__ = f"seed_layout_{strategy}"
    return factory


_ALL_REGISTRY = REGISTRY_PROPERTIES
_THREE_DBS = "uses databases 15, 14 and 13; a Redis Cluster has database 0 only"
# Racy registries: concurrent registration fails or leaves a gap, and a client that dies between
# writing the forward and the inverse table leaves them disagreeing.
_RACY = frozenset({NO_SPURIOUS_ERRORS, GAP_FREE, TABLES_AGREE})
_FLIGHT = SINGLE_FLIGHT_PROPERTIES
_BANK = TRANSACTION_PROPERTIES
_QUEUE = QUEUE_PROPERTIES
_LIMITER = frozenset({NO_STUCK_KEY, NO_FALSE_REFUSAL, CLOCK_SKEW_SAFE})

# The expiry-time locks (SETNX/GETSET) compute the expiry they write before a round trip that may
# come after a stall: a grant then carries a lease that had already run out (stale-grant).
IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation(
        "naive", "registry", reg.NaiveRegistry, "registry",
        "GET, INCR, SETNX in separate round trips (seed's register_naive)",
        "seed 000", _ALL_REGISTRY, _RACY,
    ),
    Implementation(
        "seed_transaction", "registry", reg.SeedTransactionRegistry, "registry",
        "the seed's final code: transaction() whose INCR runs outside MULTI",
        "seed 000", _ALL_REGISTRY, _RACY,
    ),
    Implementation(
        "watch", "registry", reg.WatchRegistry, "registry",
        "WATCH counter+table, GET, MULTI/EXEC; jittered bounded retries",
        "seed 003", _ALL_REGISTRY,
    ),
    Implementation(
        "lock_first", "registry", reg.LockFirstRegistry, "registry",
        "token lock (SET NX PX), then read and write in one MULTI/EXEC",
        "seed 003", _ALL_REGISTRY,
    ),
    Implementation(
        "lua", "registry", reg.LuaRegistry, "registry",
        "one server-side script: HGET, INCR, HSET, HSET",
        "", _ALL_REGISTRY,
    ),
    Implementation(
        "seed_layout", "registry", _seed_layout("seed_transaction"), "registry",
        "seed 000 as published: Registerer on three databases",
        "seed 000", _ALL_REGISTRY, _RACY, single_node=_THREE_DBS,
    ),
    Implementation(
        "seed_layout_lua", "registry", _seed_layout("lua"), "registry",
        "Registerer on three databases, made safe by one script",
        "seed 000", _ALL_REGISTRY, single_node=_THREE_DBS,
    ),
    Implementation(
        "setnx_getset", "lock", setnx_getset.factory, "lease",
        "SETNX an expiry time; GET, GETSET to take an expired one; DEL (seed 002's Mutex)",
        # Mutual exclusion too, with no clock skew: a holder whose lease ran out DELs the key a
        # second client's acquire (still under way) has just taken; that acquire then returns a
        # grant, and a third client takes the free key while the second holds.
        "seed 002", LEASE_CLAIMS, frozenset({MUTUAL_EXCLUSION, CLOCK_SKEW_SAFE, SAFE_RELEASE, STALE_GRANT}),
    ),
    Implementation(
        "redis_objects", "lock", redis_objects.factory, "lease",
        "redis-objects' lock: SETNX/GET/GETSET expiry times; DEL only if not expired",
        "seed 004", LEASE_CLAIMS, frozenset({CLOCK_SKEW_SAFE, SAFE_RELEASE, STALE_GRANT}),
    ),
    Implementation(
        "setnx_del", "lock", setnx_del.factory, "lease",
        "SETNX an expiry time; an expired lock is DELeted, then SETNX again",
        "seed 004", LEASE_CLAIMS, frozenset({MUTUAL_EXCLUSION, CLOCK_SKEW_SAFE, SAFE_RELEASE, STALE_GRANT}),
    ),
    Implementation(
        "set_nx_ex", "lock", set_nx_ex.factory, "lease",
        "SET key true NX EX; released by a plain DEL",
        "seed 001", LEASE_CLAIMS, frozenset({SAFE_RELEASE}),
    ),
    Implementation(
        "exists_then_set", "lock", exists_then_set.factory, "lease",
        "EXISTS, then SET in a second round trip, no TTL (seed 001's ダメな例)",
        "seed 001", LEASE_CLAIMS, frozenset({MUTUAL_EXCLUSION, CRASH_LIVENESS, SAFE_RELEASE}),
    ),
    Implementation(
        "incr_counter", "lock", incr_counter.factory, "lease",
        "MULTI INCR + EXPIRE, whoever gets 1 holds it; every try renews the TTL; DEL",
        "seed 001", LEASE_CLAIMS, frozenset({SAFE_RELEASE, CRASH_LIVENESS}),
    ),
    Implementation(
        "lock_with_timeout", "lock", lock_with_timeout.factory, "lease",
        "SETNX then EXPIRE in two round trips; the no-TTL repair never fires; DEL",
        "seed 003", LEASE_CLAIMS, frozenset({SAFE_RELEASE, CRASH_LIVENESS}),
    ),
    Implementation(
        "token", "lock", token.factory, "lease",
        "SET NX PX a random token; compare-and-delete / compare-and-pexpire scripts",
        "seed 003", LEASE_CLAIMS,
    ),
    Implementation(
        "fenced", "lock", fenced.factory, "fenced-lease",
        "token lease + a fencing token INCRed in the same script; FencedResource",
        "", LEASE_CLAIMS | {FENCING},
    ),
    Implementation(
        "semaphore", "semaphore", semaphore.factory, "semaphore",
        "sorted set of leases scored by server-time expiry, one script per step",
        "seed 003", LEASE_CLAIMS,
    ),
    Implementation(
        "fair_semaphore", "semaphore", semaphore.fair_factory, "fair-semaphore",
        "Redis in Action's fair semaphore (ticket counter, owner and timeout zsets), queued",
        "seed 003", LEASE_CLAIMS | {FIFO},
    ),
    Implementation(
        "single_flight", "single_flight", single_flight.factory, "single-flight",
        "leader lease renewed while computing; result or error handed over in Redis",
        "seed 001", _FLIGHT,
    ),
    Implementation(
        "exclusive_access", "single_flight", single_flight.exclusive_access_factory, "single-flight",
        "SET NX EX, leader DELs, waiters poll EXISTS; result in process memory (seed 001)",
        "seed 001", _FLIGHT, frozenset({RUNS_ONCE, SHARED_RESULT, LEADER_FAILURE}),
    ),
    Implementation(
        "bank_watch", "transaction", WatchBank, "bank",
        "WATCH both accounts, MGET, MULTI SET SET EXEC, bounded retries; audit: WATCH, GETs, empty EXEC",
        "seed 003", _BANK,
    ),
    Implementation(
        "bank_lock_first", "transaction", LockFirstBank, "bank",
        "a token lock per account (key order), MGET, MULTI SET SET EXEC, release; audit in MULTI/EXEC",
        "seed 003", _BANK,
    ),
    Implementation(
        "bank_lua", "transaction", LuaBank, "bank",
        "one script: check the source's balance and move; audit: GETs inside MULTI/EXEC",
        "", _BANK,
    ),
    Implementation(
        "bank_audit_multi", "transaction", LuaBank, "bank",
        "audit_separate_reads' correct twin: the same GETs, inside one MULTI/EXEC",
        "", _BANK,
    ),
    # A lost update (money made) or an overdraft (an account below zero) is seen by every later
    # audit too: consistent-audit is broken besides.
    Implementation(
        "transfer_no_watch", "transaction", NoWatchBank, "bank",
        "MGET both accounts, then MULTI SET SET EXEC with no WATCH",
        "", _BANK, _BANK, anomaly="lost update",
    ),
    Implementation(
        "transfer_watch_some", "transaction", WatchSomeBank, "bank",
        "WATCH the credited account only, read the debited one, MULTI DECRBY INCRBY EXEC",
        "", _BANK, _BANK, anomaly="write skew",
    ),
    Implementation(
        "audit_separate_reads", "transaction", SeparateReadsBank, "bank",
        "transfers by one script; the audit GETs each account in its own round trip",
        "", _BANK, frozenset({SERIALIZABLE, CONSISTENT_AUDIT}), anomaly="read skew",
    ),
    Implementation(
        "list_queue", "queue", lease_list.factory, "queue",
        "BLMOVE into a processing list, a lease per job (sorted set, server clock), a reaper script "
        "that requeues only what lost its lease",
        "", _QUEUE,
    ),
    Implementation(
        "stream_queue", "queue", stream.factory, "queue",
        "XREADGROUP in one consumer group, XACK, XAUTOCLAIM of jobs idle 1.1 leases",
        "", _QUEUE,
    ),
    Implementation(
        "brpop_queue", "queue", pop.factory, "queue",
        "LPUSH, then BRPOP with no processing list: a job leaves Redis when it is taken",
        "", _QUEUE, frozenset({NO_LOSS}),
    ),
    Implementation(
        "blind_reaper_queue", "queue", lease_list.blind_reaper_factory, "queue",
        "list_queue whose reaper requeues a job seen in processing at its previous sweep, lease or not",
        "", _QUEUE, frozenset({NO_DOUBLE_DELIVERY}),
    ),
    # Its nack removes by value too, whoever holds the copy: a consumer whose lease ran out gives
    # back the copy another now holds, and a third takes it (found by the stale-holder check).
    Implementation(
        "ack_by_value_queue", "queue", value_list.factory, "queue",
        "a list of bare values, a lease key per value; ack is LREM processing 0 value (every copy)",
        "", _QUEUE, frozenset({NO_LOSS, NO_DOUBLE_DELIVERY}),
    ),
    Implementation(
        "short_claim_queue", "queue", stream.short_claim_factory, "queue",
        "stream_queue whose XAUTOCLAIM takes jobs idle half a lease",
        "", _QUEUE, frozenset({NO_DOUBLE_DELIVERY}),
    ),
    Implementation(
        "peek_take_queue", "queue", lease_list.peek_then_remove_factory, "queue",
        "list_queue whose take reads the next id (LRANGE), then LREMs and leases it in a second round "
        "trip, whatever LREM removed",
        "", _QUEUE, frozenset({NO_DOUBLE_DELIVERY}),
    ),
    Implementation(
        "fixed_window", "rate_limiter", fixed_window.factory, "rate-limiter",
        "one script: GET the window's counter; if the hit fits, INCRBY, and PEXPIRE a new counter",
        "", _LIMITER | {FIXED_WINDOW},
    ),
    # A log admits at most `limit` in any window_ms, so in each fixed window too.
    Implementation(
        "sliding_log", "rate_limiter", sliding_log.factory, "rate-limiter",
        "one script on a sorted set scored by TIME: ZREMRANGEBYSCORE, ZCARD, ZADD, PEXPIRE",
        "", _LIMITER | {SLIDING_LOG, FIXED_WINDOW},
    ),
    Implementation(
        "gcra", "rate_limiter", gcra.factory, "rate-limiter",
        "GCRA in one script on TIME: the theoretical arrival time moves on by cost * window/limit",
        "", _LIMITER | {TOKEN_BUCKET},
    ),
    # The counter left without an expiry refuses every hit once it is full, windows later too.
    Implementation(
        "incr_then_expire", "rate_limiter", fixed_window.incr_then_expire_factory, "rate-limiter",
        "INCRBY, then PEXPIRE in a second round trip when the count shows a new window",
        "", _LIMITER | {FIXED_WINDOW}, frozenset({NO_STUCK_KEY, NO_FALSE_REFUSAL}),
    ),
    Implementation(
        "get_then_incr", "rate_limiter", fixed_window.get_then_incr_factory, "rate-limiter",
        "GET the counter, decide, then SET NX PX and INCRBY in a MULTI",
        "", _LIMITER | {FIXED_WINDOW}, frozenset({FIXED_WINDOW}),
    ),
    Implementation(
        "separate_count_log", "rate_limiter", sliding_log.separate_count_factory, "rate-limiter",
        "sliding log in three round trips: TIME; ZREMRANGEBYSCORE and ZCARD; ZADD and PEXPIRE",
        "", _LIMITER | {SLIDING_LOG, FIXED_WINDOW}, frozenset({SLIDING_LOG, FIXED_WINDOW}),
    ),
    Implementation(
        "unwatched_bucket", "rate_limiter", gcra.unwatched_factory, "rate-limiter",
        "token bucket: TIME and HMGET, compute the refill, HSET and PEXPIRE in a MULTI, no WATCH",
        "", _LIMITER | {TOKEN_BUCKET}, frozenset({TOKEN_BUCKET}),
    ),
    # Its window is chosen by the client's clock before the round trip: a client whose clock is
    # skewed, or that stalls between reading it and its MULTI, counts in a window not the server's.
    Implementation(
        "client_clock_window", "rate_limiter", fixed_window.client_clock_factory, "rate-limiter",
        "a counter per window numbered by the client's clock (time() // window), INCRBY and PEXPIRE in a MULTI",
        "", _LIMITER | {FIXED_WINDOW}, frozenset({CLOCK_SKEW_SAFE, FIXED_WINDOW}),
    ),
)  # fmt: skip


#: The redis.asyncio implementations (issue 16). Kept out of IMPLEMENTATIONS on purpose: every sync
#: path (check, stress, load, the state machines) iterates IMPLEMENTATIONS and would call these
#: factories with a sync client; only the async battery reads this tuple.
ASYNC_IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation(
        "async_token", "lock", async_token.factory, "lease",
        "redis.asyncio SET NX PX a random token; shielded compare-and-delete, token cleared after it",
        "redis-py #3900", LEASE_CLAIMS, asynchronous=True,
    ),
    # The violation appears only under cancellation: a task cancelled in release() before the
    # compare-and-delete is sent leaves the key held by nobody who can release it, until its TTL
    # (forever without one, as in redis-py's Lock with timeout=None). Without cancellations it
    # behaves exactly as async_token. The TTL still bounds the damage, so a check that only asks
    # "freed within about one TTL" misses it: the holder is alive, and must still be able to free
    # the lock by calling release() again (async_token can; this one raises and the key stays).
    Implementation(
        "async_early_clear", "lock", async_early_clear.factory, "lease",
        "async_token whose release clears the token before an unshielded compare-and-delete (redis-py #3847)",
        "redis-py #3847", LEASE_CLAIMS, frozenset({CRASH_LIVENESS}), asynchronous=True,
    ),
    Implementation(
        "async_lua", "registry", async_lua.factory, "registry",
        "redis.asyncio, one server-side script: HGET, INCR, HSET, HSET (lua's twin)",
        "", _ALL_REGISTRY, asynchronous=True,
    ),
    Implementation(
        "async_check_then_set", "registry", async_check_then_set.factory, "registry",
        "redis.asyncio HGET, INCR, HSETNX, HSETNX at separate awaits (naive's twin)",
        "seed 000", _ALL_REGISTRY, _RACY, asynchronous=True,
    ),
    Implementation(
        "async_stream_queue", "queue", async_stream.factory, "queue",
        "redis.asyncio XREADGROUP in one consumer group, XACK, XAUTOCLAIM of jobs idle 1.1 leases "
        "(stream_queue's twin)",
        "", _QUEUE, asynchronous=True,
    ),
    Implementation(
        "async_short_claim_queue", "queue", async_stream.short_claim_factory, "queue",
        "async_stream_queue whose XAUTOCLAIM takes jobs idle half a lease (short_claim_queue's twin)",
        "", _QUEUE, frozenset({NO_DOUBLE_DELIVERY}), asynchronous=True,
    ),
)  # fmt: skip


#: Locks that span independent masters (`contend check --masters N`). Kept out of IMPLEMENTATIONS:
#: their factories take the list of the masters' clients, not one client.
MULTI_MASTER_IMPLEMENTATIONS: tuple[Implementation, ...] = (
    Implementation(
        "redlock", "lock", redlock.Redlock, "lease",
        "Redlock as published: SET NX PX on each master, quorum N//2+1, validity TTL - elapsed - drift; "
        "release and extend on every master",
        "antirez", LEASE_CLAIMS, masters=5,
    ),
)  # fmt: skip


def by_name(name: str) -> Implementation:
    """The entry called `name`; KeyError lists the known names."""
    for impl in IMPLEMENTATIONS:
        if impl.name == name:
            return impl
    known = ", ".join(i.name for i in IMPLEMENTATIONS)
    raise KeyError(f"no implementation called {name!r}; known: {known}")


def async_by_name(name: str) -> Implementation:
    """The async entry called `name`; KeyError lists the known async names."""
    for impl in ASYNC_IMPLEMENTATIONS:
        if impl.name == name:
            return impl
    known = ", ".join(i.name for i in ASYNC_IMPLEMENTATIONS)
    raise KeyError(f"no async implementation called {name!r}; known: {known}")


def family(name: str) -> list[Implementation]:
    """Every entry of one family, in catalog order."""
    return [i for i in IMPLEMENTATIONS if i.family == name]
