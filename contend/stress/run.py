"""Multiprocess stress runs: N worker processes, faults injected, the recorded history checked.

`run_stress` starts the embedded server (or connects to --redis-url), spawns
the workers (`contend.stress.workers`), runs the nemesis (`contend.stress.nemesis`) in the
parent's main thread while they work, merges the workers' records by time into
one history (`<out>/stress-<id>/history.jsonl`, kept for `contend history
check`), checks it (linearizability against the family's model, plus the
linear-time invariants) and writes the verdict and an HTML timeline beside it.

The implementation is a catalog one or the user's `package.module:factory` of
kind registry or lock: imported and its signature checked by `validate`, one
object built and (for a lock) tried once on the server by `probe` before any
worker starts, which finds out where its fencing token comes from, as `contend
check` does. A requested nemesis that injected no fault makes the run exit 2
(`StressResult.no_fault` says why); one that cannot fit in the run is refused
by `validate`.

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
from dataclasses import dataclass, field, replace
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import redis
from redis.crc import key_slot

from contend.ci.document import document
from contend.errors import ContendError
from contend.exitcodes import ExitCode
from contend.history.formats import write_jsonl
from contend.history.invariants import Violation
from contend.history.models import HistoryCheck, exit_code, history_check
from contend.history.records import Call, Record, make_record, pair
from contend.history.verdict import Linearizability, Verdict
from contend.impl.catalog import IMPLEMENTATIONS, SEED_LAYOUT_DBS, Implementation, by_name
from contend.servers.cluster import check_cluster_option
from contend.servers.deployment import Deployment
from contend.servers.keyspace import Namespace, new_run_id
from contend.servers.signals import signal_process
from contend.servers.urls import is_cluster_url
from contend.stress.board import Board, Field
from contend.stress.nemesis import Nemesis, NemesisContext, parse_nemeses, unreachable
from contend.stress.workers import (
    COUNTER_KEY,
    FAMILIES,
    LOCK_KEY,
    WorkerSpec,
    acquire_timeout,
    catalog_fencing,
    connect,
    worker_main,
    workload_key,
)
from contend.subject.loader import load_factory, require_kind
from contend.subject.multi_master import (
    DEFAULT_MASTERS,
    MULTI_MASTER_LOCKS,
    MULTI_MASTER_SIGNATURE,
    check_masters,
    over_masters,
    takes_one_client,
)
from contend.subject.probe import PROBE_SECONDS, check_offline, try_once
from contend.subject.protocols import check_factory_signature

MAX_PROCS = 256
#: How long workers may take to start (spawned interpreters import redis-py and the implementations).
START_TIMEOUT = 60.0
TICK = 0.01
#: Seconds building one of a user's objects (and, for a lock, one acquire and release) may take.


@dataclass(frozen=True)
class StressWorkload:
    """What runs and how its history is checked: the model, the calls it sees, the linear-time
    invariants. `name` is a catalog name, or `package.module:factory` for a user's implementation
    (`kind` set)."""

    name: str
    family: str
    factory: Callable[..., Any]
    ttl_ms: int = 500
    kind: str | None = None
    #: Where a lock's fencing token comes from (None: not fenced, writes go straight to the counter).
    fencing: str | None = None
    #: For a user's lock: how its fencing was found out, in words.
    probe: str = ""
    #: A lock whose acquire may lose to contention while it is free (Redlock's split vote).
    may_refuse: bool = False

    @property
    def user(self) -> bool:
        """A user's `package.module:factory`, not a catalog implementation."""
        return self.kind is not None

    @property
    def fenced(self) -> bool:
        return self.fencing is not None

    def fencing_note(self) -> str:
        """A lock's fencing in words: where the token comes from and where the writes go."""
        if self.fenced:
            return f"fencing token from {self.fencing}: writes go through FencedResource"
        return f"no fencing token{self.probe}: writes go straight to the counter"

    @property
    def history_model(self) -> str:
        """The `contend history check --model` that re-checks a kept history."""
        return "registry" if self.family == "registry" else "mutex"

    def history_check(self, calls: Sequence[Call]) -> HistoryCheck:
        """The check of the run's history: `contend history check` builds the same one from the
        model name and the options `recheck_options` gives it."""
        lock = self.family == "lock"
        return history_check(
            self.history_model,
            calls,
            lease_expiry=lock,
            ttl_ms=self.ttl_ms if lock else None,
            may_refuse=self.may_refuse,
        )

    def recheck_options(self) -> str:
        """The `contend history check` options that rebuild this run's check."""
        if self.family != "lock":
            return ""
        return f" --lease-expiry --ttl-ms {self.ttl_ms}" + (" --may-refuse" if self.may_refuse else "")


@dataclass
class StressOptions:
    """What to run; the CLI's options, with the same defaults."""

    #: A catalog name, or `package.module:factory` with `kind`.
    impl: str
    #: The family a user's `package.module:factory` follows (registry or lock); None: catalog.
    kind: str | None = None
    procs: int = 4
    duration: float = 5.0
    nemeses: tuple[str, ...] = ()
    interval: float = 1.0
    ttl_ms: int = 500
    hold_ms: float = 2.0
    fault_ms: int | None = None
    lag_ms: int = 100
    persistence: str = "none"
    appendfsync: str = "always"
    op_timeout: float = 1.0
    out: Path = Path("runs")
    redis_url: str | None = None
    redis_server: str | None = None
    namespace: str | None = None
    seed: int = 0
    check_timeout: float = 30.0
    html: bool = True
    #: Masters of an embedded Redis Cluster to run on (None: one server). cluster-failover gives
    #: each master a replica.
    cluster: int | None = None
    #: Redlock's independent masters (--masters N), for --only redlock or pottery_redlock (None:
    #: DEFAULT_MASTERS for those, no masters otherwise).
    masters: int | None = None

    @property
    def on_cluster(self) -> bool:
        """Does the run go to a Redis Cluster (--cluster N, or a redis+cluster:// --redis-url)?"""
        return self.cluster is not None or bool(self.redis_url and is_cluster_url(self.redis_url))


@dataclass
class RunProgress:
    """What a progress display shows while a run is under way."""

    elapsed: float
    duration: float
    ok: int
    fail: int
    info: int
    nemesis: str
    checking: bool = False


@dataclass
class StressResult:
    """A finished run: where its files are and what the check found."""

    options: StressOptions
    workload: StressWorkload
    target: str
    run_dir: Path
    history: Path
    verdict: Verdict
    violations: list[Violation]
    calls: list[Call]
    nemesis: list[Record]
    seconds: float
    invariants: list[str] = field(default_factory=list)
    timeline: Path | None = None
    counts: dict[str, int] = field(default_factory=dict)
    #: Why each requested nemesis that injected no fault did not (the run then exits 2).
    no_fault: list[str] = field(default_factory=list)

    @property
    def history_exit_code(self) -> int:
        """The history's own verdict: 0 valid, 1 a violation, 3 unknown (the search budget ran
        out before every partition was decided)."""
        return exit_code(self.verdict, self.violations)

    @property
    def exit_code(self) -> int:
        """The history's verdict, or 2 when a requested nemesis injected no fault: the run did
        not test what was asked, whatever its history shows."""
        return ExitCode.BAD_INPUT if self.no_fault else self.history_exit_code

    @property
    def history_outcome(self) -> str:
        return {0: "valid", 1: "violation", 3: "unknown"}[self.history_exit_code]

    @property
    def outcome(self) -> str:
        """The run's verdict word: the history's, or no-fault."""
        return "no-fault" if self.no_fault else self.history_outcome

    def headline(self) -> str:
        """One line: the run's verdict (NO FAULT first if a nemesis did nothing) and its first piece of evidence."""
        if self.no_fault:
            return f"NO FAULT — {self.no_fault[0]} (the history: {self.history_headline()})"
        return self.history_headline()

    def history_headline(self) -> str:
        """One line: the history's verdict and its first piece of evidence."""
        if self.verdict.outcome is Linearizability.NOT_LINEARIZABLE:
            culprit = self.verdict.culprit
            what = f": cannot linearize {culprit.describe()}" if culprit else ""
            return f"VIOLATION — not linearizable ({self.verdict.model}){what}"
        if self.violations:
            v = self.violations[0]
            return f"VIOLATION — {v.check}: {v.message}"
        if self.history_exit_code == 3:
            return "UNKNOWN — the linearizability search ran out of time; raise --search-seconds"
        return "VALID — linearizable, and every invariant holds"

    def recheck_command(self) -> str:
        """The `contend history check` command that re-checks the kept history."""
        model, extra = self.workload.history_model, self.workload.recheck_options()
        return f"contend history check {self.history} --model {model}{extra}"

    def to_json(self) -> dict[str, Any]:
        o = self.options
        lock = self.workload.family == "lock"
        return {
            "impl": o.impl,
            "user_implementation": self.workload.user,
            "family": self.workload.family,
            "fencing": self.workload.fencing if lock else None,
            "target": self.target,
            "processes": o.procs,
            "duration": o.duration,
            "nemesis": list(o.nemeses),
            "no_fault": self.no_fault,
            "history_verdict": self.history_outcome,
            "ttl_ms": o.ttl_ms if lock else None,
            "counts": self.counts,
            "seconds": round(self.seconds, 3),
            "history": str(self.history),
            "timeline": str(self.timeline) if self.timeline else None,
            "linearizability": self.verdict.to_json(),
            "invariants": self.invariants,
            "violations": [v.to_json() for v in self.violations],
            "nemesis_events": [{"time": r.time, "f": r.f, "value": r.value} for r in self.nemesis],
        }


def stressable() -> list[Implementation]:
    """Catalog implementations `contend stress` can drive."""
    return [i for i in IMPLEMENTATIONS if i.family in FAMILIES]


def validate(options: StressOptions) -> StressWorkload:
    """Check the options before anything starts; ContendError (exit 2) says what to change.

    A user's `package.module:factory` is imported and its signature checked here; the object it
    makes is checked once a server is up, before any worker starts (`run_stress`)."""
    user = options.kind is not None or ":" in options.impl
    workload = _user_workload(options) if user else _catalog_workload(options)
    if not 0 < options.procs <= MAX_PROCS:
        raise ContendError(f"--processes must be between 1 and {MAX_PROCS}, got {options.procs}")
    for name, value in (
        ("--duration", options.duration),
        ("--interval", options.interval),
        ("--op-timeout", options.op_timeout),
        ("--search-seconds", options.check_timeout),
    ):
        if not value > 0:
            raise ContendError(f"{name} must be > 0 seconds, got {value}")
    if options.ttl_ms < 10:
        raise ContendError(f"--ttl-ms must be at least 10, got {options.ttl_ms}")
    if options.hold_ms < 0:
        raise ContendError(f"--hold-ms must be >= 0, got {options.hold_ms}")
    if options.fault_ms is not None and options.fault_ms <= 0:
        raise ContendError(f"--fault-ms must be > 0, got {options.fault_ms}")
    if options.redis_url and options.persistence != "none":
        raise ContendError(
            "--persistence configures the embedded server; a --redis-url server keeps its own settings"
        )
    _check_cluster(options, workload)
    _check_masters(options)
    options.nemeses = parse_nemeses(
        options.nemeses,
        redis_url=options.redis_url,
        cluster=options.on_cluster,
        masters=bool(options.masters),
    )
    refused = unreachable(
        options.nemeses,
        duration=options.duration,
        interval=options.interval,
        lock=workload.family == "lock",
        ttl_ms=options.ttl_ms,
        fault_ms=options.fault_ms,
        lag_ms=options.lag_ms,
    )
    if refused:
        raise ContendError(refused)
    return workload


def _check_cluster(options: StressOptions, workload: StressWorkload) -> None:
    """--cluster N: a size contend builds, no --redis-url beside it, and an implementation that
    can run on a cluster."""
    check_cluster_option(options.cluster, options.redis_url)
    if options.cluster is not None and options.persistence != "none":
        raise ContendError("--persistence configures the single embedded server, not a --cluster")
    if options.on_cluster and not workload.user:
        impl = by_name(workload.name)
        if impl.single_node:
            raise ContendError(f"--only {impl.name} cannot run on a Redis Cluster: {impl.single_node}")


def _check_masters(options: StressOptions) -> None:
    """--masters N goes with a Redlock (--only redlock or pottery_redlock) or the user's own lock
    over masters (--impl M:F --kind lock, called as MULTI_MASTER_SIGNATURE), on embedded servers."""
    redlock = options.impl in MULTI_MASTER_LOCKS and options.kind is None
    if options.masters is None:
        options.masters = DEFAULT_MASTERS if redlock else None
        return
    if not redlock and options.kind != "lock":
        raise ContendError(
            "--masters runs a lock over independent masters: --only "
            f"{' or --only '.join(MULTI_MASTER_LOCKS)}, or your own with --impl MODULE:FACTORY --kind lock "
            f"(called as {MULTI_MASTER_SIGNATURE})"
        )
    check_masters(options.masters)
    if options.redis_url or options.cluster is not None:
        raise ContendError(
            "--masters starts its own independent masters: drop --redis-url and --cluster (contend restarts "
            "and pauses only servers it started)"
        )


def _catalog_workload(options: StressOptions) -> StressWorkload:
    if options.impl in MULTI_MASTER_LOCKS:
        lock = MULTI_MASTER_LOCKS[options.impl]
        return StressWorkload(lock.name, "lock", lock.build, options.ttl_ms, may_refuse=True)
    names = ", ".join([*(i.name for i in stressable()), *MULTI_MASTER_LOCKS])
    try:
        impl = by_name(options.impl)
    except KeyError:
        raise ContendError(f"--only {options.impl!r}: no such implementation; stress runs: {names}") from None
    if impl.family not in FAMILIES:
        raise ContendError(
            f"--only {impl.name} is a {impl.family}; stress runs the {' and '.join(FAMILIES)} families "
            f"({names}); use `contend check` for the others"
        )
    return StressWorkload(impl.name, impl.family, impl.factory, options.ttl_ms, fencing=catalog_fencing(impl))


def _user_workload(options: StressOptions) -> StressWorkload:
    """A user's `package.module:factory` of `options.kind`: imported, its signature checked."""
    spec, kind = options.impl, options.kind
    families = " and ".join(FAMILIES)
    require_kind(spec, kind, f"{families}: the families stress runs")
    assert kind is not None  # require_kind
    if kind not in FAMILIES:
        label = kind.replace("_", "-")
        raise ContendError(
            f"--kind {label}: stress runs the {families} families; check a {label} with "
            f"`contend check --impl {spec} --kind {label}`"
        )
    factory = load_factory(spec)
    check_factory_signature(factory, kind, spec)
    if options.masters is not None:
        if takes_one_client(factory):
            raise ContendError(
                f"--impl {spec}: with --masters it is called as {MULTI_MASTER_SIGNATURE}, but its first "
                "parameter is annotated as one client (drop --masters to run a lock on one server)"
            )
        # A try-lock over several masters may lose a split vote: a refusal, not a fault.
        return StressWorkload(spec, kind, factory, options.ttl_ms, kind=kind, may_refuse=True)
    check_offline(factory, kind, spec)
    return StressWorkload(spec, kind, factory, options.ttl_ms, kind=kind)


def probe(workload: StressWorkload, namespace: Namespace, master_urls: Sequence[str] = ()) -> StressWorkload:
    """A user's implementation, checked on the server before any worker starts: the factory makes an
    object with the protocol's methods, and for a lock one acquire and release tell where its
    fencing token comes from (as `contend check` finds out). A catalog workload is returned as is."""
    if not workload.user:
        return workload
    kind = workload.family
    where = namespace.child("probe") if kind == "registry" else namespace.key("probe")
    if master_urls:  # the user's lock over the masters: probed on them, through one-server eyes
        first = redis.Redis.from_url(master_urls[0], socket_connect_timeout=5)
        try:
            factory = over_masters(workload.factory, master_urls[1:])
            found = try_once(factory, kind, workload.name, first, where)
        finally:
            first.close()
    else:
        found = try_once(workload.factory, kind, workload.name, namespace.client, where)
    if kind != "lock":
        return workload
    if found is None:
        note = f" (not found out: one acquire and release did not return within {PROBE_SECONDS:g} s)"
        return replace(workload, probe=note)
    note = "" if found.fencing else " (a trial acquire returned no int and left no fencing_token attribute)"
    return replace(workload, fencing=found.fencing, probe=note)


# --------------------------------------------------------------------------- the run


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
        masters=options.masters or 0,
        keep_clock=False,  # worker processes in real time: the servers keep theirs
    )
    raw_dir.mkdir(parents=True, exist_ok=False)
    workers: list[BaseProcess] = []
    nemesis: Nemesis | None = None
    namespace: Namespace | None = None
    events: list[dict[str, Any]] = []
    finals: list[dict[str, Any]] = []
    paths = [raw_dir / f"w{k}.jsonl" for k in range(options.procs)]
    manifest = _Manifest(run_dir / "run.json", options, run_id)

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
        workload = probe(workload, namespace, [m.url for m in deployment.lock_masters])
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
            finals.append(_final_read(deployment.url, namespace.prefix, workload, options.op_timeout))
    finally:
        if nemesis is not None:
            nemesis.heal()
        deployment.heal()
        _stop_workers(workers)
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
    verdict, violations, calls, check = check_records(records, workload, timeout=options.check_timeout)
    nemesis_records = [r for r in records if r.process == "nemesis"]
    injected = {r.f for r in nemesis_records if str(r.value).startswith("start")}
    assert nemesis is not None
    no_fault = [
        nemesis.why_none(name, ran=ran, duration=options.duration)
        for name in options.nemeses
        if name not in injected
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
        invariants=check.invariant_names,
        counts=counts,
        no_fault=no_fault,
    )
    if options.html:
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

    def __init__(self, path: Path, options: StressOptions, run_id: str) -> None:
        self.path = path
        self.doc: dict[str, Any] = {
            "run_id": run_id,
            "parent": os.getpid(),
            "options": {k: str(v) if isinstance(v, Path) else v for k, v in vars(options).items()},
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


def _final_read(url: str, namespace: str, workload: StressWorkload, op_timeout: float) -> dict[str, Any]:
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


def _remove_raw(raw_dir: Path) -> None:
    for path in raw_dir.glob("*.jsonl"):
        with contextlib.suppress(OSError):
            path.unlink()
    with contextlib.suppress(OSError):
        raw_dir.rmdir()
