"""Round trips counted on a client."""

from __future__ import annotations

from contend.load.instrument import counting_client, round_trips


def test_counting_client_counts_round_trips(contend_target, ns):
    counted = counting_client(contend_target.url)
    try:
        counted.ping()  # connecting sends a few commands of its own
        before = round_trips(counted)
        counted.ping()
        with counted.pipeline() as pipe:
            pipe.set(ns.key("a"), 1).incr(ns.key("a")).get(ns.key("a"))
            pipe.execute()
        assert round_trips(counted) - before == 2  # a MULTI/EXEC block is one round trip
    finally:
        counted.close()
