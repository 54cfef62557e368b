"""Running the scoreboard: each library row through the lock battery, then a verdict per property.

A row runs every lock check but `bad-input` (which would judge contend's adapter, not the
library) with the claims the library makes. A property's verdict is `fail` when a check broke
it, `inconclusive` when a check about it (or the schedule check, which judges them all)
could not decide, `pass` otherwise; a property the library does not claim is not judged.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import redis.asyncio

from contend.check.battery import ASYNC_BATTERIES, BATTERIES, ResultRow, run_battery
from contend.check.framework import FAIL, INCONCLUSIVE, CheckOptions, CheckResult
from contend.check.schedule import SCHEDULE
from contend.impl.catalog import BAD_INPUT, PROGRESS
from contend.scoreboard.confirm import CONFIRM_ATTEMPTS, confirm, is_again
from contend.scoreboard.expected import Finding, expected_failures
from contend.scoreboard.ids import CHECK_PROPS, run_id_checks
from contend.scoreboard.library import ID_FAMILY, Library, LibraryMissing
from contend.servers.binary import find_redis_server
from contend.servers.server import EmbeddedRedis
from contend.servers.target import Target, open_target
from contend.subject.resolve import library_subject
from contend.subject.subject import Subject

PASS_V, FAIL_V, INCONCLUSIVE_V, NOT_CLAIMED = "pass", "fail", "inconclusive", ""
#: Checks that judge the adapter rather than the library.
SKIPPED_CHECKS = frozenset({"bad-input"})
#: Judged for every row: an operation that never returns is a finding whatever the claims.
ALWAYS = (PROGRESS,)


@dataclass
class LibraryResult:
    """One row of the scoreboard."""

    library: Library
    version: str = ""
    skipped: str = ""  # why the row did not run (the library is not installed)
    row: ResultRow | None = None
    seconds: float = 0.0
    #: The adapter's fidelity: its one-line reason, what its probe saw, and the error if it failed.
    fidelity: str = ""
    fidelity_seen: str = ""
    fidelity_error: str = ""
    #: What was printed by the code under test and counted, not shown (contend.check.noise).
    noise: str = ""

    @property
    def properties(self) -> list[str]:
        """The properties judged for this row: its claims, then those judged always."""
        always = () if self.library.family == ID_FAMILY else ALWAYS  # judged by the state machines
        return [*sorted(self.library.claims), *(p for p in always if p not in self.library.claims)]

    def failures(self, prop: str) -> list[CheckResult]:
        """The failed checks that name `prop` as the property broken."""
        return [r for r in self.row.results if r.status == FAIL and r.prop == prop] if self.row else []

    def verdict(self, prop: str) -> str:
        if self.row is None or prop not in self.properties:
            return NOT_CLAIMED
        if self.failures(prop):
            return FAIL_V
        about = [r for r in self.row.results if r.check == SCHEDULE.name or r.prop == prop]
        if self.library.family == ID_FAMILY:  # no schedule check: each check judges its property
            about = [r for r in self.row.results if CHECK_PROPS.get(r.check) == prop or r.prop == prop]
        if not about or any(r.status == INCONCLUSIVE for r in about):
            return INCONCLUSIVE_V
        return PASS_V

    def expected(self, prop: str) -> str:
        if prop not in self.properties:
            return NOT_CLAIMED
        return FAIL_V if prop in expected_failures(self.library.key) else PASS_V

    def finding(self, prop: str) -> Finding | None:
        return expected_failures(self.library.key).get(prop)

    def unsettled(self, prop: str) -> bool:
        """Inconclusive where the row says its checks may be (and why): not a surprise."""
        return bool(self.library.may_be_inconclusive) and self.verdict(prop) == INCONCLUSIVE_V

    def unmet(self, prop: str) -> bool:
        """A finding that some runs do not meet (it says why), passed in this one: not a surprise."""
        finding = self.finding(prop)
        return finding is not None and bool(finding.sometimes) and self.verdict(prop) == PASS_V

    def unconfirmed(self) -> list[tuple[str, tuple[str, ...]]]:
        """The findings this run did not meet that can be attempted again (contend.scoreboard.confirm):
        each property, with the checks that meet it."""
        return [
            (prop, finding.met_by)
            for prop in self.properties
            if (finding := self.finding(prop)) is not None and finding.met_by and self.unmet(prop)
        ]

    def confirmed_by(self, prop: str) -> CheckResult | None:
        """The attempt after the run that met the finding on `prop`, if the run's own checks did not."""
        results = self.row.results if self.row else []
        if any(not is_again(r) and r.status == FAIL and r.prop == prop for r in results):
            return None
        return next((r for r in results if is_again(r) and r.status == FAIL and r.prop == prop), None)

    def not_met(self) -> list[str]:
        """Every recorded finding this run did not meet (one whose search may miss it, and did), in
        words: a failure of the run of its own (contend.commands.scoreboard, exit 3)."""
        if self.row is None or self.fidelity_error:
            return []
        return [
            f"{self.library.key} · {prop}: pass, recorded as a finding that some runs miss "
            f"({finding.sometimes})"
            + (
                f"; not met either by its checks again ({', '.join(finding.met_by)})"
                if finding.met_by
                else ""
            )
            for prop in self.properties
            if (finding := self.finding(prop)) is not None and self.unmet(prop)
        ]

    def surprises(self) -> list[str]:
        """Every verdict that differs from the recorded expectation, in words."""
        if self.fidelity_error:
            return [f"{self.library.key} · adapter fidelity: {self.fidelity_error}"]
        if self.row is None:
            return []
        found = [
            f"{self.library.key} · {prop}: {self.verdict(prop)}, expected {self.expected(prop)}"
            for prop in self.properties
            if self.verdict(prop) != self.expected(prop) and not self.unmet(prop) and not self.unsettled(prop)
        ]
        unclaimed = {r.prop for r in self.row.results if r.status == FAIL} - set(self.properties)
        found += [f"{self.library.key} · {prop}: fail (not claimed)" for prop in sorted(unclaimed)]
        return found


@dataclass
class Scoreboard:
    server: str
    results: list[LibraryResult] = field(default_factory=list)
    seconds: float = 0.0
    quick: bool = False

    @property
    def surprises(self) -> list[str]:
        return [s for r in self.results for s in r.surprises()]

    @property
    def not_met(self) -> list[str]:
        """The recorded findings no row met this run (see LibraryResult.not_met)."""
        return [s for r in self.results for s in r.not_met()]


def subject_for(library: Library, factory: Callable[..., object]) -> Subject:
    """The battery's row for a library: its claims, and how `contend scoreboard` replays it."""
    return library_subject(
        factory,
        library.family,
        name=library.key,
        summary=library.title,
        claims=library.claims,
        selector=("--lib", library.key),
        command=("contend", "scoreboard"),
        asynchronous=False if library.family == ID_FAMILY else None,
    )


def checks_for(library: Library, replay: str | None) -> list[str]:
    """The checks a row runs (only the schedule check when replaying one of its examples)."""
    if replay:
        return [SCHEDULE.name]
    return [
        c.name
        for c in (*BATTERIES[library.family], *ASYNC_BATTERIES.get(library.family, []))
        if c.name not in SKIPPED_CHECKS and c.prop != BAD_INPUT
    ]


def started_here(target: Target) -> bool:
    """Did contend start the board's server (not --redis-url)? Then a row that spans several
    masters gets masters of its own, started as every multi-master run starts them."""
    return target.deployment is not None and target.deployment.redis_url is None


@contextlib.contextmanager
def _masters(
    target: Target, library: Library, redis_server: str | None, own_masters: bool
) -> Iterator[Target]:
    """The target of a row: `target` for a lock on one server; for one that spans several, with
    `own_masters` its masters as every multi-master run starts them (`open_target(masters=N)`,
    on a clock of their own), else (beside a server contend did not start, --redis-url) that
    server and `masters - 1` embedded ones."""
    if library.masters <= 1:
        yield target
        return
    if own_masters:
        with open_target(redis_server=redis_server, masters=library.masters) as spanning:
            yield spanning
        return
    with contextlib.ExitStack() as stack:
        binary = find_redis_server(redis_server, keep_clock=target.clock is not None)
        others = [
            stack.enter_context(EmbeddedRedis(binary, clock=target.clock)) for _ in range(library.masters - 1)
        ]
        yield replace(
            target,
            description=f"{target.description} + {len(others)} embedded masters",
            also=tuple(s.url for s in others),
        )


def run_library(
    library: Library,
    target: Target,
    options: CheckOptions,
    *,
    redis_server: str | None = None,
    on_result: Callable[[Subject, CheckResult], None] = lambda s, r: None,
    stop: threading.Event | None = None,
    result: LibraryResult | None = None,
    namespace: str | None = None,
    own_masters: bool | None = None,
    confirm_attempts: int = CONFIRM_ATTEMPTS,
) -> LibraryResult:
    """One row: the library's version, then its battery, filled into `result` as it runs (so an
    interrupted row keeps its checks so far). A row whose library is missing is skipped, with
    the reason. A row spanning several masters gets its own (`own_masters`, by default when
    contend started `target`: see `started_here`). A recorded finding the battery did not meet
    is attempted again, up to `confirm_attempts` times (contend.scoreboard.confirm)."""
    if own_masters is None:
        own_masters = started_here(target)
    result = result or LibraryResult(library)
    if library.not_run:
        result.skipped = library.not_run
        return result
    try:
        result.version = library.version()
        module = (
            library.adapter_module()
        )  # imports the library: a missing one is skipped before servers start
    except LibraryMissing as exc:
        result.skipped = str(exc)
        return result
    started = time.perf_counter()
    rows: list[ResultRow] = []
    try:
        with _masters(target, library, redis_server, own_masters) as spanning:
            client = spanning.client()
            run_ns = spanning.namespace(namespace, client=client)
            try:
                if not options.replay:
                    check_fidelity(module, spanning, run_ns.key(library.key, "fidelity"), result)
                    if result.fidelity_error:
                        return result
                subject = subject_for(library, library.factory(spanning.also))
                if library.family == ID_FAMILY:
                    rows.append(ResultRow(subject))
                    rows[0].results += run_id_checks(
                        spanning, subject.factory, options, run_ns, subject, on_result, stop
                    )
                else:
                    run_battery(
                        spanning,
                        [subject],
                        options,
                        run_ns,
                        on_result,
                        only_checks=checks_for(library, options.replay),
                        stop=stop,
                        rows=rows,
                    )
                    if rows and not options.replay and confirm_attempts:
                        result.row = rows[0]

                        def run_again(checks: Sequence[str], sized: CheckOptions) -> list[CheckResult]:
                            again: list[ResultRow] = []
                            run_battery(
                                spanning, [subject], sized, run_ns, only_checks=checks, stop=stop, rows=again
                            )
                            return again[0].results if again else []

                        confirm(
                            result.unconfirmed,
                            run_again,
                            options,
                            rows[0].results,
                            on_result=lambda r: on_result(subject, r),
                            attempts=confirm_attempts,
                            stop=stop,
                        )
            finally:
                run_ns.cleanup()
                client.close()
    finally:
        result.row = rows[0] if rows else None
        result.seconds = time.perf_counter() - started
    return result


def check_fidelity(module: Any, target: Target, key: str, result: LibraryResult) -> None:
    """Run the adapter's fidelity probe (`fidelity(client, key)` or `fidelity_async`): what it saw,
    or why the adapter is not faithful to the library's units and defaults."""
    result.fidelity = getattr(module, "FIDELITY", "")
    probe = getattr(module, "fidelity", None)
    probe_async = getattr(module, "fidelity_async", None)
    if not result.fidelity or (probe is None and probe_async is None):
        result.fidelity_error = f"{module.__name__} has no FIDELITY reason and probe"
        return
    try:
        if probe is not None:
            client = target.client()
            try:
                result.fidelity_seen = probe(client, key)
            finally:
                client.close()
        else:
            result.fidelity_seen = asyncio.run(_probe_async(probe_async, target.url, key))
    except Exception as exc:
        result.fidelity_error = f"{type(exc).__name__}: {exc}"


async def _probe_async(probe: Any, url: str, key: str) -> str:
    client = redis.asyncio.Redis.from_url(url)
    try:
        seen: str = await probe(client, key)
        return seen
    finally:
        await client.aclose()


def run_scoreboard(
    libraries: Sequence[Library],
    target: Target,
    options: CheckOptions,
    *,
    redis_server: str | None = None,
    on_result: Callable[[Subject, CheckResult], None] = lambda s, r: None,
    on_library: Callable[[Library], None] = lambda lib: None,
    stop: threading.Event | None = None,
    board: Scoreboard | None = None,
    namespace: str | None = None,
    confirm_attempts: int = CONFIRM_ATTEMPTS,
) -> Scoreboard:
    """Every row in turn, appended to `board` as it starts (an interrupted run keeps the rows
    so far)."""
    board = board or Scoreboard(target.description)
    started = time.perf_counter()
    try:
        for library in libraries:
            if stop is not None and stop.is_set():
                break
            on_library(library)
            result = LibraryResult(library)
            board.results.append(result)
            run_library(
                library,
                target,
                options,
                redis_server=redis_server,
                on_result=on_result,
                stop=stop,
                result=result,
                namespace=namespace,
                confirm_attempts=confirm_attempts,
            )
    finally:
        board.seconds = time.perf_counter() - started
    return board
