"""A stress run's history: the workers' files, the nemesis events and the final read merged by
time into one history, and checked as `contend history check` checks it."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contend.history.invariants import Violation
from contend.history.models import HistoryCheck
from contend.history.records import Call, Record, make_record, pair
from contend.history.verdict import Verdict
from contend.stress.workers import COUNTER_KEY, connect, workload_key
from contend.stress.workload import StressWorkload


def final_read(url: str, namespace: str, workload: StressWorkload, op_timeout: float) -> dict[str, Any]:
    """Read the lock-protected counter once everything has stopped (a read for locked_counter)."""
    key = workload_key(namespace, COUNTER_KEY, url)
    invoke = time.monotonic_ns()
    client = connect(url, max(op_timeout, 2.0))
    doc: dict[str, Any] = {"process": "final", "f": "read", "key": COUNTER_KEY, "value": None}
    try:
        raw = client.hget(key, "value") if workload.fenced else client.get(key)
        return {**doc, "type": "ok", "value": int(raw or 0), "time": time.monotonic_ns(), "invoke": invoke}
    except Exception as exc:
        return {
            **doc,
            "type": "info",
            "error": f"{type(exc).__name__}: {exc}",
            "time": time.monotonic_ns(),
            "invoke": invoke,
        }
    finally:
        client.close()


def merge(
    paths: Sequence[Path], events: Sequence[dict[str, Any]], finals: Sequence[dict[str, Any]]
) -> list[Record]:
    """The workers' files, the nemesis events and the final reads, as one history ordered by time.

    A line cut short (a worker killed while writing) is dropped; its
    operation then has no completion and counts as info.
    """
    keyed: list[tuple[int, int, int, dict[str, Any]]] = []
    for rank, path in enumerate(paths):
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        for seq, line in enumerate(lines):
            try:
                doc = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("time"), int):
                keyed.append((doc["time"], rank, seq, doc))
    rank = len(paths)
    for seq, doc in enumerate(events):
        keyed.append((doc["time"], rank, seq, doc))
    for seq, doc in enumerate(finals):
        invoke = {k: v for k, v in doc.items() if k not in ("time", "invoke", "error")}
        keyed.append(
            (
                doc["invoke"],
                rank + 1,
                2 * seq,
                {**invoke, "type": "invoke", "value": None, "time": doc["invoke"]},
            )
        )
        keyed.append((doc["time"], rank + 1, 2 * seq + 1, {k: v for k, v in doc.items() if k != "invoke"}))
    keyed.sort(key=lambda item: item[:3])
    return [make_record(doc, i, i + 1, "history.jsonl") for i, (_, _, _, doc) in enumerate(keyed)]


def check_records(
    records: Sequence[Record], workload: StressWorkload, *, timeout: float | None = 30.0
) -> tuple[Verdict, list[Violation], list[Call], HistoryCheck]:
    """Linearizability against the family's model(s), and the family's invariants, as
    `contend history check` does it: (verdict, violations, calls, the check)."""
    paired = pair(records)
    calls = paired.calls
    check = workload.history_check(calls)
    verdict, violations = check.run(calls, nemesis=paired.nemesis, timeout=timeout)
    assert verdict is not None
    return verdict, violations, calls, check
