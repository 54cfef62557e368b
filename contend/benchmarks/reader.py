"""History reader benchmark: MB/s of the EDN reader on a generated Jepsen history, beside JSONL.

Run as `python -m contend.benchmarks.reader`. The history is the checker
benchmark's simulated cas-register run (a linearizable history with timeouts),
written in Jepsen's current shape: one map per line with `:index`, `:time` in
nanoseconds, keyword types, `:error` on `:info` completions and nemesis lines.
The same records are also written as JSONL, and reading that (a C JSON decoder
plus the schema check) is the baseline measured in the same run, so the ratio
means something on a noisy machine.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from contend.benchmarks.checker import cas_register_history
from contend.history.formats import dumps_jsonl, parse_edn, parse_jsonl
from contend.history.records import Record

#: Timed runs of each reader; the best is kept.
RUNS = 3


def jepsen_history(operations: int = 100_000, seed: int = 7) -> list[Record]:
    """`operations` cas-register operations by 10 processes (2% timeouts), and a nemesis every 1,000 records."""
    client = cas_register_history(processes=10, operations=operations, seed=seed, info_rate=0.02)
    records: list[Record] = []
    for k, r in enumerate(client):
        if k and k % 1000 == 0:
            start = (k // 1000) % 2 == 1
            value = "isolated" if start else "network-healed"
            records.append(Record("nemesis", "info", "start" if start else "stop", None, value, r.time))
        error = '[:timeout "Read timed out"]' if r.type == "info" else None
        records.append(Record(r.process, r.type, r.f, None, r.value, r.time, 0, error))
    return [
        Record(r.process, r.type, r.f, r.key, r.value, None if r.time is None else r.time * 1000, i, r.error)
        for i, r in enumerate(records)
    ]


def edn_lines(records: Sequence[Record]) -> str:
    """The records as Jepsen writes history.edn: one map per line."""
    out = []
    for r in records:
        process = ":nemesis" if r.process == "nemesis" else str(r.process)
        value = r.value
        text = (
            "nil"
            if value is None
            else f":{value}"
            if isinstance(value, str)
            else "[" + " ".join(map(str, value)) + "]"
            if isinstance(value, list)
            else str(value)
        )
        line = f"{{:index {r.index}, :time {r.time}, :type :{r.type}, :process {process}, :f :{r.f}, :value {text}"
        if r.error is not None:
            line += f", :error {r.error}"
        out.append(line + "}\n")
    return "".join(out)


def best_of(fn: Callable[[], Any], runs: int = RUNS) -> tuple[float, Any]:
    """The shortest of `runs` timed calls, and the last result."""
    best = float("inf")
    result = None
    for _ in range(runs):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m contend.benchmarks.reader", description=__doc__)
    parser.add_argument(
        "--operations", type=int, default=100_000, help="client operations (default %(default)s)"
    )
    args = parser.parse_args(argv)
    records = jepsen_history(args.operations)
    edn = edn_lines(records)
    jsonl = dumps_jsonl(records)
    edn_mb, jsonl_mb = len(edn.encode()) / 1e6, len(jsonl.encode()) / 1e6
    edn_s, from_edn = best_of(lambda: parse_edn(edn, "history.edn"))
    jsonl_s, from_jsonl = best_of(lambda: parse_jsonl(jsonl, "history.jsonl"))
    same = [(r.process, r.type, r.f, r.value, r.time) for r in from_edn] == [
        (r.process, r.type, r.f, r.value, r.time) for r in from_jsonl
    ]
    print(f"{args.operations} operations, {len(records)} records (best of {RUNS})")
    print(f"EDN   {edn_mb:7.2f} MB  {edn_s:7.3f} s  {edn_mb / edn_s:6.2f} MB/s")
    print(f"JSONL {jsonl_mb:7.2f} MB  {jsonl_s:7.3f} s  {jsonl_mb / jsonl_s:6.2f} MB/s")
    print(
        f"EDN/JSONL: {(edn_mb / edn_s) / (jsonl_mb / jsonl_s):.2f} of the JSONL reader's MB/s; "
        f"records agree: {'yes' if same else 'NO'}"
    )
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
