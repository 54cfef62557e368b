"""The options of a contend Locust run, validated against the selected workloads (`resolve`):
`Settings`, and the user's `--impl` taken through the one door for it (contend.subject.resolve),
once per process."""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

from locust.env import Environment

from contend.load import workloads as wl
from contend.load.metrics import MAX_FAILED_SHARE
from contend.load.workload import LOAD_SCOPE, LoadInputError, check_positive, user_workloads
from contend.subject.resolve import load
from contend.subject.spec import SubjectSpec, parse_spec
from contend.subject.subject import Subject
from contend.values import share_of_one

log = logging.getLogger("contend")


@dataclass(frozen=True)
class Settings:
    """The validated options of one run."""

    url: str
    namespace: str
    strategy: str
    hot_keys: int
    ttl_ms: int
    workloads: tuple[str, ...]
    impl: Subject | None = None  # --impl: the user's implementation is the strategy
    max_failed_share: float = MAX_FAILED_SHARE
    #: Without --strategy, a workload that has no `watch` runs its own default (jobs: `list`).
    defaults: tuple[tuple[str, str], ...] = ()

    def prefix(self, workload: str) -> str:
        return f"{self.namespace}:{workload}"

    def strategy_of(self, workload: str) -> str:
        """The strategy `workload` runs with: --strategy (or --impl), else its default."""
        return dict(self.defaults).get(workload, self.strategy)


#: The user classes of contend's workloads loaded in this process (contend.load.harness.ContendUser
#: subclasses that name a workload).
LOADED: list[type] = []


def workload_names(environment: Environment | None = None) -> list[str]:
    """Workloads of the selected user classes (all loaded ones before a selection exists)."""
    classes = environment.user_classes if environment is not None else LOADED
    return sorted({c.workload for c in classes if c in LOADED})  # type: ignore[attr-defined]


def parsed_options(environment: Environment) -> Any:
    """Locust's parsed command line (the harness only runs where Locust parsed one)."""
    if environment.parsed_options is None:
        raise LoadInputError("Locust started without parsed options; run it as `locust -f loadtests/`")
    return environment.parsed_options


def resolve(environment: Environment, workloads: tuple[str, ...] = ()) -> Settings:
    """Validate the options against the selected workloads; LoadInputError says what to change."""
    options = parsed_options(environment)
    names = list(workloads) or workload_names(environment)
    if not names:
        raise LoadInputError("no contend workload selected; run `locust -f loadtests/`")
    strategy = str(options.strategy or "").strip()
    impl = _user_impl(options, strategy, names)
    if impl is not None:
        strategy = impl.name
    defaults: tuple[tuple[str, str], ...] = ()
    if not strategy:
        # watch where a workload has it, else the workload's own first strategy (jobs: list).
        own = {n: next(iter(wl.workload(n).strategies())) for n in names}
        defaults = tuple((n, s) for n, s in own.items() if "watch" not in wl.workload(n).strategies())
        strategy = "watch" if len(defaults) < len(names) else defaults[0][1]
        defaults = tuple((n, s) for n, s in defaults if s != strategy)
    missing = (
        []
        if impl is not None
        else [n for n in names if n not in dict(defaults) and strategy not in wl.workload(n).strategies()]
    )
    if missing:
        known = "; ".join(f"{n}: {', '.join(wl.workload(n).strategies())}" for n in names)
        common = set.intersection(*(set(wl.workload(n).strategies()) for n in names))
        hint = f"; every selected workload has: {', '.join(sorted(common))}" if len(names) > 1 else ""
        if len(names) > 1:
            hint += "; or load one workload: locust -f loadtests/<workload>.py"
        raise LoadInputError(
            f"--strategy {strategy!r} is unknown to the {', '.join(missing)} workload ({known}){hint}"
        )
    hot_keys = check_positive(options.hot_keys, "--hot-keys", " (1 is maximal contention)")
    ttl_ms = check_positive(options.ttl_ms, "--ttl-ms", " (the lease of lock strategies, in ms)")
    max_failed = share_of_one(
        getattr(options, "max_failed_share", MAX_FAILED_SHARE), "--max-failed-share", error=LoadInputError
    )
    given: str = options.namespace
    old: str = getattr(options, "key_namespace", None) or ""
    if not given and old:
        log.warning(
            "contend: --key-namespace is deprecated, use --namespace (accepted until the next release)"
        )
        given = old
    namespace = str(given or "").strip()
    if given and not namespace:
        raise LoadInputError("--namespace must not be blank; leave it out for a fresh contend:<id>")
    return Settings(
        str(options.redis_url or "").strip(),
        namespace,
        strategy,
        hot_keys,
        ttl_ms,
        tuple(names),
        impl,
        float(max_failed),
        defaults,
    )


def _user_impl(options: Any, strategy: str, names: list[str]) -> Subject | None:
    """--impl and --kind through the one door (contend.subject.resolve), checked against the
    selected workloads (None without --impl)."""
    spec = str(getattr(options, "impl", "") or "").strip()
    kind = str(getattr(options, "kind", "") or "").strip()
    parsed = parse_spec(spec, kind, LOAD_SCOPE)
    if parsed is None:
        return None
    if strategy:
        raise LoadInputError(
            f"--impl {spec} and --strategy {strategy}: choose one (--impl runs your implementation as the strategy)"
        )
    impl = _loaded(parsed)
    runs = user_workloads(impl)
    wrong = [n for n in names if n not in runs]
    if wrong:
        files = ",".join(f"loadtests/{n}.py" for n in runs)
        raise LoadInputError(
            f"--impl {spec} is a {impl.family}: it runs in the {' and '.join(runs)} workload"
            f"{'s' if len(runs) > 1 else ''}, not in {', '.join(wrong)}; load only those: "
            f"locust -f {files}"
        )
    return impl


@functools.cache
def _loaded(spec: SubjectSpec) -> Subject:
    """The user's code through the one door, once per process (the options are resolved at
    start-up and again at every test start)."""
    return load(spec)
