"""Multiprocess stress runs: N worker processes, faults injected, the recorded history checked.

`run_stress` starts the embedded server (or connects to --redis-url), spawns
the workers (`contend.stress.workers`), runs the nemesis (`contend.stress.nemesis`) in the
parent's main thread while they work, merges the workers' records by time into
one history (`<out>/stress-<id>/history.jsonl`, kept for `contend history
check`), checks it (linearizability against the family's model, plus the
linear-time invariants) and writes the verdict and an HTML timeline beside it.

The implementation is a catalog one or the user's `package.module:factory` of
kind registry or lock, taken through the one door for the code under test
(`contend.subject.resolve`): parsed, imported and its signature checked by
`validate` (contend.stress.options), one object built and (for a lock) tried
once on the server before any worker starts (`contend.stress.workload.tried`),
which finds out where its fencing token comes from, as `contend check` does. A
requested nemesis that injected no fault (or none that took effect) makes the run exit 3
(`StressResult.no_fault` says why); one that cannot fit in the run is refused
by `validate`. The history is merged and checked in contend.stress.history; a transaction run's (a bank's) is judged from what the server
ran, as its MONITOR stream shows it (contend.stress.bank_run).

Every process and server a run starts is resumed (SIGCONT) and stopped when it
ends: normally, on an error and on Ctrl-C. Workers and servers also die with
the parent on Linux (PR_SET_PDEATHSIG), even when it is killed with SIGKILL.

Workers are spawned (multiprocessing's "spawn"): a script that calls
`run_stress` must do so under `if __name__ == "__main__":`.
"""

from __future__ import annotations

import contextlib
import json
import multiprocessing
import os
import shutil
import signal
import time
from collections.abc import Callable, Sequence
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

from redis.crc import key_slot

from contend.ci.document import document
from contend.errors import ContendError
from contend.history.formats import write_jsonl
from contend.history.records import pair
from contend.impl.catalog import APPLIES_ONCE, CONSISTENT_AUDIT, SEED_LAYOUT_DBS, SERIALIZABLE
from contend.servers.deployment import Deployment
from contend.servers.keyspace import Namespace, new_run_id
from contend.servers.signals import signal_process
from contend.stress.bank_run import BankRun
from contend.stress.board import Board, Field
from contend.stress.history import check_records, final_read, merge
from contend.stress.nemesis import Nemesis, NemesisContext
from contend.stress.options import StressOptions, validate
from contend.stress.result import RunProgress, StressResult
from contend.stress.worker_main import worker_main
from contend.stress.workers import (
    COUNTER_KEY,
    LOCK_KEY,
    WorkerSpec,
    acquire_timeout,
    workload_key,
)
from contend.stress.workload import StressWorkload, tried

#: What a transaction run judges (contend.stress.bank_check).
TRANSACTION_PROPERTIES = (SERIALIZABLE, CONSISTENT_AUDIT, APPLIES_ONCE)
#: How long workers may take to start (spawned interpreters import redis-py and the implementations).
START_TIMEOUT = 60.0
TICK = 0.01


def run_stress(
    options: StressOptions,
    progress: Callable[[RunProgress], None] | None = None,
    started_on: Callable[[str], None] | None = None,
) -> StressResult:
    """Run, record, check; `started_on(description)` once the servers answer. KeyboardInterrupt
    propagates after everything is stopped (the history so far is kept)."""
    workload = validate(options)
    started = time.perf_counter()
    run_id = new_run_id()
    run_dir = Path(options.out) / f"stress-{run_id}"
    raw_dir = run_dir / "workers"
    ctx = multiprocessing.get_context("spawn")
    deployment = Deployment(
        redis_url=options.redis_url,
        redis_server=options.redis_server,
        persistence=options.persistence,  # type: ignore[arg-type]
        appendfsync=options.appendfsync,
        replica="failover" in options.nemeses,
        cluster=options.cluster,
        cluster_replicas=1 if "cluster-failover" in options.nemeses else 0,
        sentinel="sentinel-failover" in options.nemeses,
        masters=workload.masters,
        keep_clock=False,  # worker processes in real time: the servers keep theirs
    )
    raw_dir.mkdir(parents=True, exist_ok=False)
    workers: list[BaseProcess] = []
    nemesis: Nemesis | None = None
    namespace: Namespace | None = None
    events: list[dict[str, Any]] = []
    finals: list[dict[str, Any]] = []
    paths = [raw_dir / f"w{k}.jsonl" for k in range(options.procs)]
    manifest = _Manifest(run_dir / "run.json", options, run_id, workload.masters)
    bank: BankRun | None = None

    def record(f: str, text: str) -> None:
        events.append(
            {"process": "nemesis", "type": "info", "f": f, "value": text, "time": time.monotonic_ns()}
        )

    try:
        deployment.start()
        manifest.update(servers=deployment.pids(), target=deployment.description)
        if started_on is not None:
            started_on(deployment.description)
        control = deployment.control()
        namespace = Namespace(control, options.namespace or f"contend:{run_id}")
        if workload.family == "registry" and not deployment.is_cluster:
            for db in SEED_LAYOUT_DBS:
                namespace.add_db(db)
        namespace.ensure_empty()
        workload = tried(workload, namespace, [m.url for m in deployment.lock_masters])
        if workload.family == "transaction":
            # The server's record starts before anything of the run is written (the opening).
            bank = BankRun(deployment.url, run_dir, deployment.owned)
            bank.start(namespace.client, workload.factory, namespace.prefix)
        board = Board.create(ctx, options.procs, deployment.url)
        deployment.on_move = board.publish_url
        for k in range(options.procs):
            spec = WorkerSpec(
                index=k,
                procs=options.procs,
                impl=workload.name,
                namespace=namespace.prefix,
                path=str(paths[k]),
                duration=options.duration,
                ttl_ms=options.ttl_ms,
                hold_ms=options.hold_ms,
                op_timeout=options.op_timeout,
                seed=options.seed,
                parent_pid=os.getpid(),
                kind=workload.kind,
                code=workload.subject.spec if workload.subject is not None else None,
                fencing=workload.fencing,
                master_urls=tuple(m.url for m in deployment.lock_masters),
            )
            proc = ctx.Process(
                target=worker_main,
                args=(spec, board.cells, board.url_cells),
                name=f"contend-w{k}",
                daemon=True,
            )
            proc.start()
            workers.append(proc)
        manifest.update(workers=[p.pid for p in workers])
        _wait_ready(workers, board)
        nemesis = Nemesis(
            options.nemeses,
            NemesisContext(
                deployment=deployment,
                board=board,
                pids=[p.pid or 0 for p in workers],
                record=record,
                lock=workload.family == "lock",
                ttl_ms=options.ttl_ms,
                fault_ms=options.fault_ms,
                lag_ms=options.lag_ms,
                lock_key=workload_key(namespace.prefix, LOCK_KEY, deployment.url),
                slots=lambda: run_slots(namespace, workload, deployment.url),
            ),
            options.interval,
        )
        go = time.monotonic_ns()
        board.go = go
        end = go + int(options.duration * 1e9)
        nemesis.start(go, end)
        shown = 0
        servers = deployment.pids()
        now = go
        while (now := time.monotonic_ns()) < end and any(p.is_alive() for p in workers):
            nemesis.tick(now)
            if deployment.pids() != servers:
                servers = deployment.pids()
                manifest.update(servers=servers)
            if progress is not None and now - shown > 100_000_000:
                shown = now
                progress(_progress(board, (now - go) / 1e9, options.duration, nemesis.status))
            time.sleep(TICK)
        ran = (min(now, end) - go) / 1e9
        nemesis.finish()
        board.stop()
        _join(workers, options.op_timeout + acquire_timeout(options.ttl_ms) + 3)
        if progress is not None:
            progress(_progress(board, options.duration, options.duration, nemesis.status))
        if workload.family == "lock":
            finals.append(final_read(deployment.url, namespace.prefix, workload, options.op_timeout))
        if bank is not None:
            bank.read_final(workload.factory, namespace.prefix, options.op_timeout)
    finally:
        if nemesis is not None:
            nemesis.heal()
        deployment.heal()
        _stop_workers(workers)
        if bank is not None:
            bank.stop()
        if namespace is not None:
            with contextlib.suppress(Exception):
                if not deployment.owned:
                    namespace.cleanup()  # an embedded server's keys go with the server
            namespace.client.close()
        deployment.stop()
        manifest.update(servers=deployment.pids(), finished=True)
        # Keep the history, also of an interrupted run; a run that never started leaves nothing.
        history_path = run_dir / "history.jsonl"
        records = merge(paths, events, finals)
        write_jsonl(records, history_path)
        _remove_raw(raw_dir)
        if not workers:
            shutil.rmtree(run_dir, ignore_errors=True)

    if progress is not None:
        progress(RunProgress(options.duration, options.duration, 0, 0, 0, "", checking=True))
    judgement = None
    if bank is not None:
        verdict, calls = None, pair(records).calls
        judgement = bank.judge(calls, options.check_timeout, namespace.prefix if namespace else "")
        violations, invariants = judgement.violations, list(TRANSACTION_PROPERTIES)
    else:
        verdict, violations, calls, check = check_records(records, workload, timeout=options.check_timeout)
        invariants = check.invariant_names
    nemesis_records = [r for r in records if r.process == "nemesis"]
    injected = {r.f for r in nemesis_records if str(r.value).startswith("start")}
    assert nemesis is not None
    no_fault = [
        nemesis.why_none(name, ran=ran, duration=options.duration)
        for name in options.nemeses
        if name not in injected or not nemesis.took_effect(name)
    ]
    counts = {s: sum(1 for c in calls if c.status == s) for s in ("ok", "fail", "info")}
    result = StressResult(
        options=options,
        workload=workload,
        target=deployment.description,
        run_dir=run_dir,
        history=history_path,
        verdict=verdict,
        violations=violations,
        calls=calls,
        nemesis=nemesis_records,
        seconds=time.perf_counter() - started,
        invariants=invariants,
        judgement=judgement,
        counts=counts,
        no_fault=no_fault,
    )
    if options.html and verdict is not None:
        from contend.history.timeline import write_timeline

        title = f"contend stress {workload.name}"
        if options.nemeses:
            title += " · " + ", ".join(options.nemeses)
        result.timeline = write_timeline(
            verdict, run_dir / "timeline.html", title=title, violations=violations, headline=result.headline()
        )
    doc = document("stress", result.exit_code, result.outcome, **result.to_json())
    (run_dir / "verdict.json").write_text(json.dumps(doc, indent=2, default=repr, ensure_ascii=False) + "\n")
    return result


def run_slots(namespace: Namespace | None, workload: StressWorkload, url: str) -> dict[int, list[str]]:
    """On a cluster: each slot holding the run's keys, with those keys (the lock workload's lock
    and counter keys count even before they exist)."""
    keys: set[str] = set()
    if workload.family == "lock" and namespace is not None:
        keys |= {workload_key(namespace.prefix, k, url) for k in (LOCK_KEY, COUNTER_KEY)}
    if namespace is not None:
        keys |= {key.decode(errors="replace") for _, key in namespace.keys()}  # noqa: SIM118 (a Namespace, not a dict)
    slots: dict[int, list[str]] = {}
    for key in sorted(keys):
        slots.setdefault(key_slot(key.encode()), []).append(key)
    return slots


class _Manifest:
    """run.json: the run's options and every process it started (so nothing can hide)."""

    def __init__(self, path: Path, options: StressOptions, run_id: str, masters: int) -> None:
        self.path = path
        given = {k: str(v) if isinstance(v, Path) else v for k, v in vars(options).items()}
        self.doc: dict[str, Any] = {
            "run_id": run_id,
            "parent": os.getpid(),
            # The masters the lock spans (a Redlock's default of 5 included), as the run used them.
            "options": {**given, "masters": masters or None},
            "workers": [],
            "servers": [],
            "finished": False,
        }
        self.update()

    def update(self, **changes: Any) -> None:
        self.doc.update(changes)
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.doc, indent=2, default=repr) + "\n")
        tmp.replace(self.path)


def _wait_ready(workers: Sequence[BaseProcess], board: Board) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while time.monotonic() < deadline:
        if all(board.get(k, Field.READY) for k in range(len(workers))):
            return
        for k, p in enumerate(workers):
            if p.exitcode is not None:
                raise ContendError(
                    f"stress worker {k} exited with code {p.exitcode} before starting (its error is printed above)"
                )
        time.sleep(0.005)
    raise ContendError(
        f"stress workers did not start within {START_TIMEOUT:.0f} s; is the machine overloaded?"
    )


def _progress(board: Board, elapsed: float, duration: float, nemesis: str) -> RunProgress:
    return RunProgress(
        min(elapsed, duration),
        duration,
        board.total(Field.OK),
        board.total(Field.FAIL),
        board.total(Field.INFO),
        nemesis,
    )


def _join(workers: Sequence[BaseProcess], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for p in workers:
        p.join(max(0.0, deadline - time.monotonic()))


def _stop_workers(workers: Sequence[BaseProcess]) -> None:
    """SIGCONT (a stopped process ignores SIGTERM), SIGTERM, then SIGKILL; reap them all."""
    for p in workers:
        if p.pid is not None and p.exitcode is None:
            signal_process(p.pid, signal.SIGCONT)
    for p in workers:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + 2
    for p in workers:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join(2)


def _remove_raw(raw_dir: Path) -> None:
    for path in raw_dir.glob("*.jsonl"):
        with contextlib.suppress(OSError):
            path.unlink()
    with contextlib.suppress(OSError):
        raw_dir.rmdir()
