"""`contend check`."""

from __future__ import annotations

import argparse
import time
from typing import Any

from rich.console import Console
from rich.markup import escape

from contend import exitcodes, interrupt
from contend.check.battery import (
    ASYNC_BATTERIES,
    BATTERIES,
    USER_CHECK_SECONDS,
    USER_RUN_SECONDS,
    USER_SCHEDULE_EXAMPLES,
    ResultRow,
    checks_for,
    run_battery,
)
from contend.check.framework import FAIL, CheckOptions, CheckResult
from contend.check.noise import Noise, quieted
from contend.check.report import (
    claims_lines,
    evidence_lines,
    junit_cases,
    not_exercised_count,
    results_table,
    rows_json,
    summary_markdown,
)
from contend.check.schedule import SCHEDULE, parse_replay
from contend.ci.document import document
from contend.ci.junit import write_junit
from contend.ci.summary import append_summary
from contend.commands.arguments import HelpFormatter, non_negative_int, positive_float, positive_int
from contend.commands.families import FAMILY_CHOICES, family_name
from contend.commands.names import COMMANDS
from contend.commands.outputs import add_ci_options, report_console, resolve_outputs, write_document
from contend.commands.progress import Reporter
from contend.errors import ContendError
from contend.exitcodes import ExitCode
from contend.impl import catalog
from contend.schedule.gate import check_redis_py
from contend.servers.cluster import check_cluster_option
from contend.servers.target import open_target
from contend.subject.multi_master import MULTI_MASTER_SIGNATURE, check_masters
from contend.subject.resolve import load, on_target, with_capabilities
from contend.subject.spec import EVERY_KIND, parse_spec
from contend.subject.subject import Subject, catalog_implementation, catalog_subjects, multi_master_subjects

ALL_CHECKS = sorted({c.name for checks in (*BATTERIES.values(), *ASYNC_BATTERIES.values()) for c in checks})
ALL_PROPERTIES = sorted({p for family in BATTERIES for p in catalog.properties_of(family)})


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "check",
        parents=[common],
        help=COMMANDS["check"],
        description="Run every check of each implementation's family and print implementation × "
        "check. Correct implementations must pass; known-bad ones must be caught. With --impl, check "
        "your own factory against the protocol of --kind (docs/protocol.md): what "
        "is checked follows its claims. A failed cell names the kind of property broken: safety, "
        "liveness or hygiene. Exit 0 when every correct implementation passed and every known-bad one "
        "was caught, 1 when one did not, 3 when nothing failed but a check was inconclusive (its time "
        "budget ran out), 2 on bad input; 130/143 when interrupted (the results so far are printed).",
        formatter_class=HelpFormatter,
        epilog=exitcodes.epilog(),
    )
    parser.add_argument(
        "--cluster",
        type=int,
        metavar="N",
        help="run on an embedded Redis Cluster of N masters (3 to 16) that contend starts, with "
        "redis.cluster.RedisCluster clients (redis.asyncio's for async implementations); "
        "implementations the catalog marks single-node only are "
        "skipped with the reason (an existing cluster: --redis-url redis+cluster://HOST:PORT)",
    )
    parser.add_argument(
        "--masters",
        type=int,
        metavar="N",
        help="run on N independent masters (odd, 3 to 9; embedded, without persistence, or --redis-url "
        "given N times): with --impl --kind lock, your lock spanning them, its factory called as "
        f"{MULTI_MASTER_SIGNATURE}; without --impl, the catalog's multi-master locks (Redlock). The "
        "lock battery runs, and the state machine adds partitions, paused masters and masters "
        "restarted empty (after a TTL down, as Redlock requires)",
    )
    parser.add_argument(
        "--family",
        action="append",
        type=family_name,
        metavar="FAMILY",
        help=f"only this family of the catalog (repeatable): {FAMILY_CHOICES}",
    )
    parser.add_argument(
        "--only", action="append", metavar="NAME", help="only this catalog implementation (repeatable)"
    )
    parser.add_argument(
        "--impl",
        metavar="MODULE:FACTORY",
        help="check your own implementation instead of the catalog (not with --family or --only)",
    )
    parser.add_argument(
        "--kind",
        type=family_name,
        metavar="FAMILY",
        help=f"the protocol --impl follows (needed with --impl): {FAMILY_CHOICES}",
    )
    parser.add_argument(
        "--operations",
        metavar="MODULE:ATTR",
        help="with --kind operations: the operation list (a dict of method name to the Hypothesis "
        "strategy of its argument tuple; default: OPERATIONS beside the factory)",
    )
    parser.add_argument(
        "--model",
        metavar="MODULE:CLASS",
        help="with --kind operations: a class with the same methods, the sequential specification "
        "(default: MODEL beside the factory, else the implementation run one operation at a time on a "
        "fresh namespace)",
    )
    parser.add_argument(
        "--client-retries",
        type=non_negative_int,
        default=0,
        metavar="N",
        help="the clients contend hands your code resend a command up to N times after a ConnectionError "
        "or TimeoutError, with redis-py's exponential backoff: check the code as it runs with those "
        "settings (redis.Redis(host=...) retries 10 times by default in redis-py 8, Redis.from_url 0 times, "
        "RedisCluster 3 times; on --cluster too; default %(default)s). A violation that a resend caused "
        "says so",
    )
    parser.add_argument(
        "--claim",
        action="append",
        default=[],
        metavar="PROPERTY",
        help="with --impl: also check this property (repeatable), e.g. fifo for a fair semaphore; "
        f"one of {', '.join(ALL_PROPERTIES)}",
    )
    parser.add_argument(
        "--no-claim",
        action="append",
        default=[],
        metavar="PROPERTY",
        help="with --impl: do not check this property (repeatable), e.g. clock-skew-safe for a lock "
        "that documents it needs synchronised clocks",
    )
    parser.add_argument(
        "--check",
        action="append",
        choices=ALL_CHECKS,
        metavar="NAME",
        help=f"only this check (repeatable): {', '.join(ALL_CHECKS)}",
    )
    parser.add_argument(
        "--replay",
        metavar="VERSION:BLOB",
        help="run the schedule check on one recorded example (printed with a schedule failure's "
        "evidence) against one implementation (--impl, or --only NAME)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random model check (default 0)")
    parser.add_argument(
        "--serial-names",
        type=positive_int,
        default=CheckOptions.serial_names,
        metavar="N",
        help="names in the serial test (default %(default)s; seed 000 uses 10000)",
    )
    parser.add_argument(
        "--burst-clients",
        type=positive_int,
        default=CheckOptions.burst_clients,
        metavar="N",
        help="clients released together in the burst checks (default %(default)s)",
    )
    parser.add_argument(
        "--burst-rounds",
        type=positive_int,
        default=CheckOptions.burst_rounds,
        metavar="N",
        help="rounds of the one-name burst (default %(default)s)",
    )
    parser.add_argument(
        "--schedule-examples",
        type=positive_int,
        metavar="N",
        help="state-machine examples (interleavings) per implementation expected to be correct "
        f"(default {CheckOptions.schedule_examples} for the catalog, {USER_SCHEDULE_EXAMPLES} for --impl)",
    )
    parser.add_argument(
        "--check-seconds",
        type=positive_float,
        metavar="S",
        help="real-time budget of one check; past it the check is inconclusive and the run goes on (the "
        "schedule check ends its search a little before and reports what it tried) "
        f"(default {CheckOptions.check_seconds:g}, {USER_CHECK_SECONDS:g} for --impl)",
    )
    parser.add_argument(
        "--run-seconds",
        type=positive_float,
        metavar="S",
        help="real-time budget of the whole run: checks left when it is spent are inconclusive "
        f"(default: none, {USER_RUN_SECONDS:g} for --impl)",
    )
    parser.add_argument(
        "--shrink-seconds",
        type=positive_float,
        default=CheckOptions.shrink_seconds,
        metavar="S",
        help="seconds Hypothesis may spend shrinking a schedule failure; it then reports the smallest "
        "interleaving found by then, with its replay command (default %(default)g)",
    )
    parser.add_argument(
        "--no-shrink",
        action="store_true",
        help="report a schedule failure as found, without shrinking it to the minimal interleaving",
    )
    parser.add_argument(
        "-v", "--verbose", action="store_true", help="print every check's detail, not only failures"
    )
    add_ci_options(parser, "the results")
    return parser


def _validate(args: argparse.Namespace) -> Subject | None:
    """Bad input is refused before anything starts; --impl is loaded here (None without it)."""
    resolve_outputs(args)
    check_cluster_option(args.cluster, args.redis_url)
    urls = getattr(args, "redis_urls", None) or ()
    if args.masters is not None and not args.impl:
        check_masters(args.masters, cluster=args.cluster, urls=urls)
    if args.masters is not None and (args.family or args.only):
        raise ContendError(
            "--masters runs your --impl, or the catalog's multi-master locks: drop --family and --only"
        )
    for name in args.only or ():
        try:
            catalog_implementation(name)
        except KeyError as exc:
            raise ContendError(exc.args[0]) from None
    if args.impl and (args.family or args.only):
        given = "--family" if args.family else "--only"
        raise ContendError(
            f"{given} chooses catalog implementations and --impl checks yours: give one of them "
            "(the protocol of --impl is --kind)"
        )
    if "operations" in (args.family or ()):
        raise ContendError(
            "--family operations: the catalog holds no primitive of yours; check one with "
            "--impl MODULE:FACTORY --kind operations (docs/own-primitive.md)"
        )
    if (args.operations or args.model) and not args.impl:
        raise ContendError(
            "--operations and --model go with --impl MODULE:FACTORY --kind operations (your own primitive)"
        )
    if (args.claim or args.no_claim) and not args.impl:
        raise ContendError(
            "--claim and --no-claim go with --impl: catalog implementations claim what the catalog says"
        )
    spec = parse_spec(
        args.impl,
        args.kind,
        EVERY_KIND,
        claim=args.claim,
        no_claim=args.no_claim,
        masters=args.masters,
        cluster=args.cluster,
        client_retries=args.client_retries,
        redis_urls=urls,
        operations=args.operations,
        model=args.model,
    )
    loaded = load(spec) if spec is not None else None  # a bad --impl fails before a server starts
    if args.replay:
        parse_replay(args.replay)
        if not args.impl and len(args.only or ()) != 1:
            raise ContendError(
                "--replay replays one implementation's example: give --impl, or exactly one --only NAME"
            )
    return loaded


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    options = CheckOptions(
        seed=args.seed,
        serial_names=args.serial_names,
        burst_clients=args.burst_clients,
        burst_rounds=args.burst_rounds,
        schedule_examples=args.schedule_examples
        or (USER_SCHEDULE_EXAMPLES if args.impl else CheckOptions.schedule_examples),
        shrink=not args.no_shrink,
        shrink_seconds=args.shrink_seconds,
        check_seconds=args.check_seconds or (USER_CHECK_SECONDS if args.impl else CheckOptions.check_seconds),
        run_seconds=args.run_seconds or (USER_RUN_SECONDS if args.impl else None),
        replay=args.replay,
    )
    check_redis_py()  # the schedule check patches redis-py: refuse one it was not written for, up front
    loaded = _validate(args)
    out = report_console(args, out, err)
    only_checks = [SCHEDULE.name] if args.replay else list(args.check or ())
    rows: list[ResultRow] = []
    noise = Noise()
    started = time.perf_counter()
    interrupted: interrupt.Interrupted | None = None
    interrupt.on_forced_exit(lambda: print_partial(rows, out, args, started))
    master_urls = tuple(getattr(args, "redis_urls", None) or ()) if args.masters else ()
    with open_target(
        None if master_urls else args.redis_url,
        args.redis_server,
        cluster=args.cluster,
        client_retries=args.client_retries,
        masters=0 if master_urls else args.masters or 0,
        master_urls=master_urls,
    ) as target:
        out.print(escape(f"contend check on {target.description}"), soft_wrap=True)
        client = target.client()
        run_ns = target.namespace(args.namespace, client=client)
        try:
            # Probed up front (a few round trips each), so the checks that need a capability are
            # counted in the progress total from its first line on.
            subjects = [
                s if target.cluster and s.single_node else with_capabilities(s, target, run_ns)
                for s in _subjects(args, target, loaded)
            ]
            planned = {s.name: len(checks_for(s, only_checks)) for s in subjects}
            with Reporter(err, "contend check", sum(planned.values()), quiet=args.quiet) as progress:

                def starting(subject: Subject, check: str) -> None:
                    # Some checks apply only once a capability is detected: the count follows.
                    actual = len(checks_for(subject, only_checks))
                    if progress.total is not None and actual != planned[subject.name]:
                        progress.set_total(progress.total + actual - planned[subject.name])
                        planned[subject.name] = actual
                    progress.working(f"{subject.name} · {check}")

                def advance(subject: Subject, result: CheckResult) -> None:
                    status = "caught" if subject.known_bad and result.status == FAIL else result.status
                    progress.finished(f"{subject.name} · {result.check}: {status} ({result.seconds:.1f} s)")

                with quieted() as noise:
                    run_battery(
                        target,
                        subjects,
                        options,
                        run_ns,
                        advance,
                        only_checks=only_checks,
                        stop=interrupt.STOP,
                        rows=rows,
                        on_start=starting,
                    )
        except interrupt.Interrupted as exc:
            interrupted = exc
        except Exception:
            # Hypothesis can turn the interrupt into an error of its own (an assertion in its
            # handler when the signal came as the search began): after a stop signal, that error
            # is the interrupt.
            if (interrupted := interrupt.arrived()) is None:
                raise
        finally:
            run_ns.cleanup()
            client.close()
    # A signal whose exception never reached us (it came while a finalizer ran) stopped the
    # battery all the same (STOP): the run is interrupted, not judged on the checks it missed.
    interrupted = interrupted or interrupt.arrived()
    code = _report(
        rows,
        out,
        args,
        started,
        target.description,
        interrupted=None if interrupted is None else interrupted.code,
    )
    if noise.summary():
        out.print(f"[dim]{escape(noise.summary())}[/]", soft_wrap=True)
    if interrupted is not None:
        out.print(
            f"[bold yellow]interrupted[/] ({escape(str(interrupted))}): the results so far are above; servers stopped"
        )
        return interrupted.code
    return code


def print_partial(rows: list[ResultRow], out: Console, args: argparse.Namespace, started: float) -> None:
    """What the interrupt watchdog prints when the run does not stop by itself in time."""
    out.print("[bold yellow]interrupted[/]: the results so far")
    _report(rows, out, args, started, "", interrupted=interrupt.forced_exit_code())


def _subjects(args: argparse.Namespace, target: Any, loaded: Subject | None) -> list[Subject]:
    if loaded is not None:
        subjects = [on_target(loaded, target)]
    elif args.masters:
        subjects = multi_master_subjects(target)
    else:
        subjects = catalog_subjects(args.family or list(BATTERIES), args.only or ())
    if target.cluster and (args.impl or args.only):
        # Chosen by name, it must run: a skipped row would pass a gate that checked nothing.
        for subject in subjects:
            if subject.single_node:
                raise ContendError(f"{subject.name} cannot run on a Redis Cluster: {subject.single_node}")
    return subjects


def _report(
    rows: list[ResultRow],
    out: Console,
    args: argparse.Namespace,
    started: float,
    server: str,
    *,
    interrupted: int | None = None,
) -> int:
    """Print the table, the claims and the evidence; write --json, --junit-xml and the CI step
    summary; the exit code. `interrupted`: the exit code of the signal that stopped the run."""
    code, headline = _verdict(rows, args, time.perf_counter() - started, interrupted=interrupted is not None)
    if rows:
        out.print(results_table(rows))
        for line in claims_lines(rows):
            out.print(escape(line), soft_wrap=True)
        lines = evidence_lines(rows)
        if args.verbose:
            for row in rows:
                for r in row.results:
                    out.print(
                        escape(f"  {row.subject.name} · {r.check} ({r.seconds:.2f} s): {r.detail}"),
                        soft_wrap=True,
                    )
        elif lines:
            out.print("[bold]evidence[/]")
            for line in lines:
                out.print(f"  {escape(line)}", soft_wrap=True)
    style = {ExitCode.OK: "bold green", ExitCode.FAILED: "bold red"}.get(code, "bold yellow")
    word, _, rest = headline.partition(":")
    out.print(
        f"[{style}]{escape(word)}[/]:{escape(rest)}" if rest else f"[{style}]{escape(word)}[/]",
        soft_wrap=True,
    )
    verdict = "interrupted" if interrupted is not None else VERDICTS[code]
    write_document(
        args.json,
        document(
            "check",
            code if interrupted is None else interrupted,
            verdict,
            headline=headline,
            server=server,
            implementations=rows_json(rows),
        ),
    )
    write_junit(args.junit_xml, "contend check", junit_cases(rows))
    append_summary(summary_markdown(rows, headline, server))
    return code


#: The overall verdict of a check run, by exit code.
VERDICTS = {
    ExitCode.OK: "as-expected",
    ExitCode.FAILED: "not-as-expected",
    ExitCode.INCONCLUSIVE: "inconclusive",
}


def _verdict(
    rows: list[ResultRow], args: argparse.Namespace, elapsed: float, *, interrupted: bool
) -> tuple[ExitCode, str]:
    """The exit code and a one-line headline. An interrupted run is not judged on the checks it
    did not reach: a known-bad implementation whose catching check never ran is not "NOT CAUGHT"."""
    if interrupted:
        ran = sum(len(row.results) for row in rows)
        found = [row for row in rows if row.failed and not row.subject.known_bad]
        headline = f"interrupted after {ran} check(s) · {elapsed:.1f} s"
        if found:
            names = ", ".join(f"{row.subject.name} ({row.verdict})" for row in found)
            return ExitCode.FAILED, f"{headline}; failing so far: {names}"
        return ExitCode.INCONCLUSIVE, headline
    bad = [row for row in rows if not row.as_expected]
    failing = [row for row in bad if row.failed or row.subject.known_bad]
    if failing:
        names = ", ".join(f"{row.subject.name} ({row.verdict})" for row in failing)
        return ExitCode.FAILED, f"{len(failing)} implementation(s) not as expected: {names} · {elapsed:.1f} s"
    if bad:
        names = ", ".join(row.subject.name for row in bad)
        timed_out = any(
            "timed out" in r.detail or "budget" in r.detail for row in bad for r in row.inconclusive
        )
        hint = " (raise --check-seconds?)" if timed_out else " (see the evidence)"
        return ExitCode.INCONCLUSIVE, f"inconclusive: {names} · {elapsed:.1f} s{hint}"
    if not rows:
        return ExitCode.OK, "nothing checked"
    if args.replay:
        replayed = rows[0].results[0] if rows[0].results else None
        return ExitCode.OK, "replayed: " + (replayed.detail if replayed else "nothing ran")
    caught = sum(row.verdict == "caught" for row in rows)
    unjudged = [row for row in rows if row.verdict == "not run"]
    correct = sum(not row.subject.known_bad for row in rows)
    not_run = (
        f", {len(unjudged)} known-bad not run (no chosen check judges what they break)" if unjudged else ""
    )
    unmet = not_exercised_count(rows)
    vacuous = f", {unmet} check(s) with a property not exercised (see the evidence)" if unmet else ""
    return (
        ExitCode.OK,
        f"all as expected: {correct} correct passed, {caught} known-bad caught{not_run}{vacuous} · {elapsed:.1f} s",
    )
