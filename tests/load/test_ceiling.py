"""The raw round-trip ceiling: redis-benchmark's CSV."""

from __future__ import annotations

from contend.load.ceiling import parse_benchmark_csv


def test_redis_benchmark_csv_is_parsed():
    old = '"PING_INLINE","98039.22"\n"PING_BULK","99009.90"\n'
    new = '"test","rps","avg_latency_ms"\n"PING_INLINE","81967.21","0.330"\n"PING_MBULK","86956.52","0.311"\n'
    assert parse_benchmark_csv(old) == 99009.90
    assert parse_benchmark_csv(new) == 86956.52
    assert parse_benchmark_csv("garbage") is None
