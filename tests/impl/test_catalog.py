"""The catalog: every lock says its model and properties, and the known-bad ones are the flawed ones."""

from __future__ import annotations

from contend.impl import catalog

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
