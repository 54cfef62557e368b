"""The catalog: every lock says its model and properties, and the known-bad ones are the flawed ones."""

from __future__ import annotations

import pytest

from contend.impl import catalog
from contend.impl.locks import async_token

LOCKS = catalog.family("lock") + catalog.family("semaphore")
FLIGHTS = catalog.family("single_flight")


def test_every_lock_entry_says_its_model_and_properties():
    models = {"lease", "fenced-lease", "semaphore", "fair-semaphore", "single-flight"}
    for impl in LOCKS + FLIGHTS:
        assert impl.model in models, impl.name
        known = (
            catalog.SINGLE_FLIGHT_PROPERTIES if impl.family == "single_flight" else catalog.LOCK_PROPERTIES
        )
        assert impl.claims and impl.claims <= known, impl.name
        assert impl.violates <= impl.claims, f"{impl.name} violates what it does not claim"
        assert impl.summary and impl.source is not None


def test_known_bad_locks_are_the_flawed_ones():
    bad = {i.name for i in LOCKS + FLIGHTS if i.known_bad}
    assert bad == {
        "setnx_getset",
        "redis_objects",
        "setnx_del",
        "set_nx_ex",
        "exists_then_set",
        "incr_counter",
        "lock_with_timeout",
        "exclusive_access",
    }
    good = {i.name for i in LOCKS + FLIGHTS if not i.known_bad}
    assert good == {"token", "fenced", "semaphore", "fair_semaphore", "single_flight"}


def test_async_entries_stay_out_of_the_sync_catalog():
    sync_names = {i.name for i in catalog.IMPLEMENTATIONS}
    async_names = {i.name for i in catalog.ASYNC_IMPLEMENTATIONS}
    assert async_names == {
        "async_token",
        "async_early_clear",
        "async_lua",
        "async_check_then_set",
        "async_stream_queue",
        "async_short_claim_queue",
    }
    assert not sync_names & async_names
    assert all(i.asynchronous for i in catalog.ASYNC_IMPLEMENTATIONS)
    assert not any(i.asynchronous for i in catalog.IMPLEMENTATIONS)
    for name in async_names:
        with pytest.raises(KeyError):
            catalog.by_name(name)


def test_async_by_name_finds_async_entries_only():
    assert catalog.async_by_name("async_token").factory is async_token.factory
    with pytest.raises(KeyError, match="known: async_token, async_early_clear"):
        catalog.async_by_name("token")


def test_async_entries_say_what_they_claim_and_violate():
    bad = {i.name: i.violates for i in catalog.ASYNC_IMPLEMENTATIONS if i.known_bad}
    assert bad == {
        "async_early_clear": frozenset({catalog.CRASH_LIVENESS}),
        "async_check_then_set": catalog.by_name("naive").violates,
        "async_short_claim_queue": catalog.by_name("short_claim_queue").violates,
    }
    for impl in catalog.ASYNC_IMPLEMENTATIONS:
        assert impl.claims and impl.claims <= catalog.properties_of(impl.family), impl.name
        assert impl.violates <= impl.claims, impl.name
        assert impl.summary
    assert catalog.async_by_name("async_token").claims == catalog.by_name("token").claims
    assert catalog.async_by_name("async_lua").claims == catalog.REGISTRY_PROPERTIES


def test_known_bad_transactions_name_the_anomaly_they_must_be_caught_for():
    banks = catalog.family("transaction")
    assert {i.name: i.anomaly for i in banks if i.known_bad} == {
        "transfer_no_watch": "lost update",
        "transfer_watch_some": "write skew",
        "audit_separate_reads": "read skew",
    }
    assert {i.name for i in banks if not i.known_bad} == {
        "bank_watch",
        "bank_lock_first",
        "bank_lua",
        "bank_audit_multi",
    }
    for impl in banks:
        assert impl.model == "bank" and impl.claims == catalog.TRANSACTION_PROPERTIES, impl.name
        assert catalog.SERIALIZABLE in impl.violates or not impl.known_bad


def test_queues_claim_the_queue_properties_and_the_known_bad_ones_name_one_defect():
    queues = catalog.family("queue")
    assert {i.name: set(i.violates) for i in queues if i.known_bad} == {
        "brpop_queue": {catalog.NO_LOSS},
        "blind_reaper_queue": {catalog.NO_DOUBLE_DELIVERY},
        "ack_by_value_queue": {catalog.NO_LOSS, catalog.NO_DOUBLE_DELIVERY},
        "short_claim_queue": {catalog.NO_DOUBLE_DELIVERY},
        "peek_take_queue": {catalog.NO_DOUBLE_DELIVERY},
    }
    assert {i.name for i in queues if not i.known_bad} == {"list_queue", "stream_queue"}
    for impl in queues:
        assert impl.model == "queue" and impl.claims == catalog.QUEUE_PROPERTIES, impl.name
    assert catalog.properties_of("queue") == catalog.QUEUE_PROPERTIES
    assert all(catalog.PROPERTY_KINDS[p] == catalog.SAFETY for p in catalog.QUEUE_PROPERTIES)


def test_rate_limiters_declare_one_algorithm_and_the_known_bad_ones_name_their_defect():
    limiters = catalog.family("rate_limiter")
    assert {i.name: set(i.violates) for i in limiters if i.known_bad} == {
        "incr_then_expire": {catalog.NO_STUCK_KEY, catalog.NO_FALSE_REFUSAL},
        "get_then_incr": {catalog.FIXED_WINDOW},
        "separate_count_log": {catalog.SLIDING_LOG, catalog.FIXED_WINDOW},
        "unwatched_bucket": {catalog.TOKEN_BUCKET},
        "client_clock_window": {catalog.CLOCK_SKEW_SAFE, catalog.FIXED_WINDOW},
    }
    assert {i.name for i in limiters if not i.known_bad} == {"fixed_window", "sliding_log", "gcra"}
    for impl in limiters:
        assert impl.model == "rate-limiter" and impl.claims <= catalog.RATE_LIMITER_PROPERTIES, impl.name
        assert impl.claims & catalog.OVER_ADMISSION_PROPERTIES, f"{impl.name} declares no algorithm"
        assert impl.violates <= impl.claims, impl.name
    # A token bucket admits a full bucket and then what refills: never held to a fixed window.
    assert all(catalog.FIXED_WINDOW not in i.claims for i in limiters if catalog.TOKEN_BUCKET in i.claims)
    assert catalog.properties_of("rate_limiter") == catalog.RATE_LIMITER_PROPERTIES
