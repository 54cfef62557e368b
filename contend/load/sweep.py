"""`contend load`: Locust, headless, over workloads × strategies × users × hot keys.

Each point is one `python -m locust -f loadtests/<workload>.py --headless`
run in its own process, against one server, with its own key namespace; its
Locust CSVs (--csv), its contend summary (--contend-json) and its log are kept
under `<out>/raw/`. The raw round-trip ceiling is measured in the same run at
every user count. `sweep.json` describes the whole sweep and is rewritten
after every point, so an interrupted sweep can still be reported.

`processes` may list several Locust process counts (`--processes 1,2,4`): every
point then runs at each of them, and the raw ceiling is measured per count with
redis-py PING loops split over as many processes, so the report can say where
one Locust process, not Redis, was the limit. Each point also records the
server's CPU use and the machine's (contend.load.cpu) over Locust's measured
window, beside the load generator's own.

With `impl` (`contend load --impl package.module:factory --kind lock|registry`)
the user's implementation is the one strategy, named by its spec, in every
workload its kind runs in; it is imported and its signature checked before
anything starts (through the one door, contend.subject.resolve), and each Locust
process loads it again through the same door, from the same current directory
and PYTHONPATH.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from importlib import metadata
from pathlib import Path
from typing import Any

import redis

from contend.errors import ContendError
from contend.load.ceiling import find_redis_benchmark, measure_ceiling
from contend.load.cpu import CpuSampler
from contend.load.metrics import MAX_FAILED_SHARE
from contend.load.summary import read_summary
from contend.load.workload import LOAD_SCOPE, LoadInputError, check_positive, user_strategy, user_workloads
from contend.load.workloads import workload
from contend.servers.keyspace import Namespace
from contend.servers.server import free_port
from contend.servers.target import Target
from contend.subject.resolve import load
from contend.subject.spec import parse_spec
from contend.subject.subject import Subject
from contend.values import share_of_one, whole_list

SWEEP_FILE = "sweep.json"
RAW_DIR = "raw"

#: The quick sweep runs the registry only; these are each workload's strategies when it is chosen
#: without --full (the full sweep runs every correct strategy).
QUICK_WORKLOADS = {
    "registry": ["watch", "lock_first", "lua"],
    "counter": ["watch", "lock_first", "incr", "lua"],
    "transfer": ["watch", "lock_first", "lua", "coarse_lock", "fine_locks"],
    "jobs": ["list", "stream"],
}
QUICK_DEFAULT = ("registry",)
QUICK_USERS = (1, 4, 16, 64)
QUICK_HOT_KEYS = (1, 10, 1000)
#: Locust's --run-time takes whole seconds (2.47 refuses `1.5s`), so each point runs whole seconds.
QUICK_SECONDS = 2

FULL_WORKLOADS = {
    "registry": ["watch", "lock_first", "lua"],
    "counter": ["watch", "lock_first", "lock_fenced", "lock_semaphore", "lock_fair_semaphore", "incr", "lua"],
    "transfer": ["watch", "lock_first", "lua", "coarse_lock", "fine_locks"],
    "jobs": ["list", "stream"],
}
FULL_USERS = (1, 2, 4, 8, 16, 32, 64)
FULL_HOT_KEYS = (1, 10, 1000)
FULL_SECONDS = 10
#: Each measurement of the raw ceiling, per user count (twice: before and after the points).
CEILING_SECONDS = 1.5
#: Options of the locustfiles a point's run sets itself, dropped from the environment Locust inherits.
LOCUST_ENV = ("CONTEND_LOAD_KNOWN_BAD", "CONTEND_STRATEGY", "CONTEND_IMPL", "CONTEND_KIND")


class SweepError(ContendError):
    """The sweep could not run at all (Locust missing, loadtests/ not found, ...)."""


@dataclass(frozen=True)
class Point:
    """One Locust run of the sweep."""

    workload: str
    strategy: str
    users: int
    hot_keys: int
    processes: int = 1
    #: Whether the sweep compares process counts (then the count is part of the name).
    by_processes: bool = field(default=False, compare=False)

    @property
    def slug(self) -> str:
        tail = f"-p{self.processes}" if self.by_processes else ""
        return f"{self.workload}/{path_part(self.strategy)}/u{self.users}-h{self.hot_keys}{tail}"

    def describe(self) -> str:
        tail = f" · {self.processes} Locust process{'es' if self.processes != 1 else ''}"
        return (
            f"{self.workload}/{self.strategy} · {self.users} users · {self.hot_keys} hot keys"
            f"{tail if self.by_processes else ''}"
        )

    def record(self) -> dict[str, Any]:
        """What sweep.json says of the point."""
        return {
            "workload": self.workload,
            "strategy": self.strategy,
            "users": self.users,
            "hot_keys": self.hot_keys,
            "processes": self.processes,
        }


@dataclass(frozen=True)
class Plan:
    """What to sweep, validated."""

    workloads: dict[str, list[str]]
    users: tuple[int, ...]
    hot_keys: tuple[int, ...]
    seconds: int
    processes: tuple[int, ...]  # Locust processes per run; several: each point at each count
    ttl_ms: int = 10_000
    ceiling_seconds: float = 1.5
    impl: str = ""  # --impl package.module:factory: the one strategy, named so
    kind: str = ""  # its --kind (lock, registry or queue)
    max_failed_share: float = MAX_FAILED_SHARE  # a point that failed more than this fails
    #: The user's code as the one door loaded it (each Locust process loads it again, from `impl`).
    subject: Subject | None = field(default=None, compare=False, repr=False)

    def record(self) -> dict[str, Any]:
        """What sweep.json says of the plan (the loaded code is not data)."""
        return {k: v for k, v in asdict(replace(self, subject=None)).items() if k != "subject"}

    def strategy_kind(self, point: Point) -> str:
        """How the report groups the point's strategy (optimistic, lock, server, user)."""
        if self.impl:
            return user_strategy(self.impl, self.kind).kind
        return workload(point.workload).strategies(include_known_bad=True)[point.strategy].kind

    def points(self) -> list[Point]:
        # The strategies and process counts of one (users, hot keys) cell run back to back: on a
        # noisy machine the figures compared with each other are then measured moments apart.
        several = len(self.processes) > 1
        return [
            Point(w, s, u, h, p, several)
            for w, strategies in self.workloads.items()
            for h in self.hot_keys
            for u in self.users
            for p in self.processes
            for s in strategies
        ]

    def ceiling_ops(self) -> list[str]:
        """The raw ceilings the workloads are read against: PING, and LPUSH/RPOP for the jobs."""
        return list(dict.fromkeys(workload(w).ceiling for w in self.workloads))

    def ceilings(self) -> int:
        """How many measurements of the raw ceiling: per user and process count and kind of
        ceiling, before and after."""
        return 2 * len(self.users) * len(self.processes) * len(self.ceiling_ops())

    def estimate_seconds(self) -> float:
        """Rough wall time: each point's run plus Locust's start-up, and the ceiling."""
        runs = sum(self.seconds + 1.0 + (3.5 if p.processes > 1 else 0.0) for p in self.points())
        return runs + self.ceilings() * (self.ceiling_seconds + 0.5)


def make_plan(
    *,
    full: bool = False,
    workloads: Sequence[str] | None = None,
    strategies: Sequence[str] | None = None,
    users: Sequence[int] | None = None,
    hot_keys: Sequence[int] | None = None,
    seconds: int | None = None,
    processes: Sequence[int] | int | None = None,
    ttl_ms: int = 10_000,
    ceiling_seconds: float | None = None,
    impl: str | None = None,
    kind: str | None = None,
    max_failed_share: float = MAX_FAILED_SHARE,
) -> Plan:
    """The quick (or --full) sweep with any of its parts replaced; LoadInputError on bad input.

    With `impl` the user's implementation (of `kind`, which it needs) is the only strategy, in
    every workload its kind runs in unless `workloads` narrows them."""
    defaults = FULL_WORKLOADS if full else QUICK_WORKLOADS
    chosen = list(dict.fromkeys(workloads)) if workloads else list(FULL_WORKLOADS if full else QUICK_DEFAULT)
    plan: dict[str, list[str]] = {}
    family = ""
    parsed = parse_spec(impl, kind, LOAD_SCOPE)
    user: Subject | None = None
    if parsed is not None:
        if strategies:
            raise LoadInputError(
                f"--impl {impl} and --strategy {', '.join(strategies)}: choose one "
                "(--impl runs your implementation as the strategy)"
            )
        user = load(parsed)
        family = user.family
        for name in chosen if workloads else user_workloads(user):
            workload(name).accept(user)
            plan[name] = [user.name]
        chosen = []  # no catalog strategies
    for name in chosen:
        known = workload(name).strategies()
        if strategies:
            picked = [s for s in dict.fromkeys(strategies) if s in known]
            if not picked:
                raise LoadInputError(
                    f"none of --strategy {', '.join(strategies)} applies to the {name} workload; "
                    f"it has: {', '.join(known)}"
                )
            plan[name] = picked
        else:
            plan[name] = list(defaults.get(name) or known)
    if strategies:
        unused = [s for s in strategies if not any(s in plan[w] for w in plan)]
        if unused:
            listing = "; ".join(f"{w}: {', '.join(workload(w).strategies())}" for w in plan)
            raise LoadInputError(
                f"--strategy {', '.join(unused)} is unknown to every chosen workload ({listing})"
            )
    users_t = tuple(
        sorted({check_positive(u, "--users") for u in (users or (FULL_USERS if full else QUICK_USERS))})
    )
    hot_t = tuple(
        sorted(
            {
                check_positive(h, "--hot-keys", " (1 is maximal contention)")
                for h in (hot_keys or (FULL_HOT_KEYS if full else QUICK_HOT_KEYS))
            }
        )
    )
    secs = seconds if seconds is not None else (FULL_SECONDS if full else QUICK_SECONDS)
    if isinstance(secs, bool) or not isinstance(secs, int) or secs < 1:
        raise LoadInputError(
            f"--duration must be a whole number of seconds >= 1 (Locust's --run-time), got {secs}"
        )
    counts = [processes] if isinstance(processes, int) else list(processes or [default_processes()])
    procs = tuple(sorted({check_positive(p, "--processes") for p in counts}))
    check_positive(ttl_ms, "--ttl-ms")
    ceiling = CEILING_SECONDS if ceiling_seconds is None else ceiling_seconds
    if not ceiling > 0:
        raise LoadInputError(f"--ceiling-duration must be > 0, got {ceiling}")
    share_of_one(max_failed_share, "--max-failed-share", error=LoadInputError)
    return Plan(
        plan,
        users_t,
        hot_t,
        secs,
        procs,
        ttl_ms,
        float(ceiling),
        impl or "",
        family,
        float(max_failed_share),
        user,
    )


def parse_counts(text: str, option: str) -> list[int]:
    """Whole numbers > 0 separated by commas ("1,2,4"); LoadInputError names the option otherwise."""
    return whole_list(text, option, error=LoadInputError)


def path_part(name: str) -> str:
    """A strategy's name as one safe path component (a spec's colon and the like become '_')."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def default_processes() -> int:
    """Load-generating processes: one core is left to the server (at least 1)."""
    return max(1, (os.cpu_count() or 1) - 1)


def loadtests_dir() -> Path:
    """The locustfiles: the repository's loadtests/, installed as the package contend.loadtests. Found,
    not imported: the locustfiles sit on top of the load harness, and Locust imports them itself."""
    spec = importlib.util.find_spec("contend.loadtests")
    if spec is None or spec.origin is None:
        raise SweepError("the package contend.loadtests is missing; reinstall contend (pip install .)")
    here = Path(spec.origin).resolve().parent
    if not (here / "registry.py").is_file():
        raise SweepError(f"no locustfiles at {here}; reinstall contend (pip install .)")
    return here


def machine() -> dict[str, Any]:
    """Cores, CPU model, OS and Python: what the figures were measured on."""
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.lower().startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {
        "cores": os.cpu_count(),
        "cpu": model or platform.processor() or platform.machine(),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "locust": _version("locust"),
        "redis-py": _version("redis"),
    }


def _version(dist: str) -> str:
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return "?"


def server_info(target: Target) -> dict[str, str]:
    client = target.client()
    try:
        info = client.info("server")
    finally:
        client.close()
    product = "Valkey" if "valkey_version" in info else "Redis"
    return {
        "product": product,
        "version": str(info.get("valkey_version") or info.get("redis_version", "?")),
        "description": target.description,
    }


@dataclass
class Sweep:
    """A sweep directory's contents (sweep.json)."""

    plan: dict[str, Any]
    command: str
    started: str
    machine: dict[str, Any]
    server: dict[str, str]
    ceiling: list[dict[str, Any]] = field(default_factory=list)
    points: list[dict[str, Any]] = field(default_factory=list)
    finished: str = ""

    def save(self, raw: Path) -> None:
        tmp = raw / (SWEEP_FILE + ".tmp")
        tmp.write_text(json.dumps(asdict(self), indent=2) + "\n")
        tmp.replace(raw / SWEEP_FILE)


def locust_command(
    point: Point, plan: Plan, url: str, namespace: str, raw: Path, locustfiles: Path
) -> list[str]:
    """The headless Locust run of one point."""
    base = raw / point.slug
    spawn_rate = max(100, point.users * 20)  # all users at once: the measured window has them all
    cmd = [
        sys.executable, "-m", "locust",
        "-f", str(locustfiles / f"{point.workload}.py"),
        "--headless", "--only-summary", "--loglevel", "WARNING",
        "-u", str(point.users), "-r", str(spawn_rate), "-t", f"{plan.seconds}s",
        "--csv", str(base), "--contend-json", f"{base}.json",
        "--redis-url", url, "--namespace", namespace,
        "--hot-keys", str(point.hot_keys), "--ttl-ms", str(plan.ttl_ms),
        "--max-failed-share", f"{plan.max_failed_share:g}",
    ]  # fmt: skip
    if plan.impl:
        cmd += ["--impl", plan.impl, "--kind", plan.kind]
    else:
        cmd += ["--strategy", point.strategy]
    if point.processes > 1:
        # A master port of its own (Locust's default, 5557, may be another run's): the forked
        # workers connect to it.
        port = str(free_port())
        cmd += ["--processes", str(point.processes), "--master-bind-host", "127.0.0.1"]
        cmd += ["--master-bind-port", port, "--master-host", "127.0.0.1", "--master-port", port]
    return cmd


def run_point(
    point: Point, plan: Plan, url: str, namespace: str, raw: Path, locustfiles: Path
) -> dict[str, Any]:
    """Run Locust for one point; what happened, for sweep.json."""
    base = raw / point.slug
    base.parent.mkdir(parents=True, exist_ok=True)
    cmd = locust_command(point, plan, url, namespace, raw, locustfiles)
    # The same current directory and PYTHONPATH: Locust imports an --impl as `contend check` does.
    env = {k: v for k, v in os.environ.items() if k not in LOCUST_ENV} | {"PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    with open(f"{base}.log", "w") as log, CpuSampler(url) as sampler:
        try:
            code = subprocess.run(
                cmd, stdout=log, stderr=subprocess.STDOUT, env=env, timeout=plan.seconds + 180
            ).returncode
        except subprocess.TimeoutExpired:
            code = -1
    summary = read_summary(Path(f"{base}.json"))
    ok = bool(summary and summary.ok) and code in (0, 1)
    workloads = summary.workloads.values() if summary else ()
    invariant_ok = summary is not None and all(w.invariant_ok for w in workloads)
    this = summary.workloads.get(point.workload) if summary else None
    window = this.locust.window if this else None
    machine_cpu, server_cpu = sampler.shares(*window) if window else (None, None)
    return {
        **point.record(),
        "kind": plan.strategy_kind(point),
        # The raw ceiling the point is read against: PING, or LPUSH/RPOP for the jobs workload.
        "ceiling": workload(point.workload).ceiling,
        "exit_code": code,
        "invariant_ok": invariant_ok,
        # Something committed and at most --max-failed-share failed (contend.load.harness).
        "progress_ok": summary is not None and all(w.ok or not w.invariant_ok for w in workloads),
        "ok": ok,
        "wall_seconds": round(time.monotonic() - started, 2),
        "csv": f"{point.slug}_stats.csv",
        "summary": f"{point.slug}.json",
        "log": f"{point.slug}.log",
        "namespace": namespace,
        "committed_per_s": this.committed_per_s if this else None,
        "generator_cpu": summary.generator_cpu if summary else None,
        # Over Locust's first to last request: the server's CPU seconds per second (every thread,
        # anyone's load), and the busy share of all the machine's cores (anyone's processes).
        "server_cpu": server_cpu,
        "machine_cpu": machine_cpu,
    }


def broken_because(raw: Path, result: dict[str, Any]) -> str:
    """Why a point failed, in the end-of-run check's words when it ran (its summary's verdict
    lines), else the last lines of Locust's log."""
    summary = read_summary(raw / result["summary"])
    workloads = summary.workloads.values() if summary else ()
    lines = [line for w in workloads if not w.ok for line in w.verdict]
    return "; ".join(lines[:2]) if lines else log_tail(raw, result, 2)


def log_tail(raw: Path, result: dict[str, Any], lines: int = 3) -> str:
    path = raw / result["log"]
    if not path.is_file():
        return ""
    kept = [x for x in path.read_text(errors="replace").splitlines() if x.strip()]
    return " | ".join(kept[-lines:])


def run_sweep(
    plan: Plan,
    target: Target,
    namespace: str,
    out: Path,
    *,
    argv: Sequence[str] = (),
    on_step: Callable[[str, int, int], None] = lambda text, done, total: None,
) -> Sweep:
    """Measure the ceiling, then every point; sweep.json is kept current in `out`/raw."""
    locustfiles = loadtests_dir()
    raw = out / RAW_DIR
    raw.mkdir(parents=True, exist_ok=True)
    sweep = Sweep(
        plan={**plan.record(), "points": len(plan.points())},
        command=" ".join(shlex.quote(a) for a in ["contend", *argv]),
        started=dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        machine=machine(),
        server=server_info(target),
    )
    sweep.save(raw)
    points = plan.points()
    total = len(points) + plan.ceilings()
    embedded = target.embedded
    # Comparing process counts, the ceiling is what as many redis-py processes push (redis-benchmark
    # is one C process whatever the count).
    several = len(plan.processes) > 1
    benchmark = None if several else find_redis_benchmark(embedded.binary.path if embedded else None)
    done = 0

    def ceiling(when: str) -> None:
        # The machine may be shared and noisy: measured before and after the points, the best kept.
        nonlocal done
        for op in plan.ceiling_ops():
            for users in plan.users:
                for procs in plan.processes:
                    where = f" · {procs} processes" if several else ""
                    what = "" if op == "ping" else f" {op}"
                    on_step(f"raw{what} ceiling ({when}) · {users} clients{where}", done, total)
                    measured = measure_ceiling(
                        target.url,
                        users,
                        plan.ceiling_seconds,
                        processes=procs,
                        benchmark=benchmark,
                        op=op,
                        key=f"{namespace}:ceiling",
                    )
                    entry = {**asdict(measured), "processes": procs, "op": op}
                    cell = (users, procs, op)
                    known = {_cell(c): c for c in sweep.ceiling}
                    if cell not in known or measured.per_second > known[cell]["per_second"]:
                        sweep.ceiling = [c for c in sweep.ceiling if _cell(c) != cell]
                        sweep.ceiling.append(entry)
                        sweep.ceiling.sort(key=_cell)
                    sweep.save(raw)
                    done += 1

    ceiling("before")
    for i, point in enumerate(points):
        on_step(point.describe(), done, total)
        result = run_point(point, plan, target.url, f"{namespace}:p{i}", raw, locustfiles)
        if result["exit_code"] == 2:
            raise SweepError(f"Locust refused {point.describe()}: {log_tail(raw, result, 1)}")
        sweep.points.append(result)
        sweep.save(raw)
        done += 1
    ceiling("after")
    sweep.finished = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    sweep.save(raw)
    return sweep


def _cell(entry: dict[str, Any]) -> tuple[int, int, str]:
    """A ceiling entry's clients, processes and kind (PING when the entry predates kinds)."""
    return int(entry["clients"]), int(entry["processes"]), str(entry.get("op", "ping"))


def cleanup(target: Target, namespace: str) -> int:
    """Delete what any point left under the sweep's namespace (a crashed run, say)."""
    client: redis.Redis = target.client()
    try:
        return Namespace(client, namespace).cleanup()
    finally:
        client.close()
