"""`contend server`."""

from __future__ import annotations

import argparse
import time
from typing import Any

from rich.console import Console
from rich.markup import escape

from contend import exitcodes
from contend.commands.arguments import HelpFormatter
from contend.commands.names import COMMANDS
from contend.target.binary import RedisBinary, find_redis_server, host_platform
from contend.target.server import EmbeddedRedis


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "server",
        help=COMMANDS["server"],
        description="Start the embedded redis-server and keep it running until Ctrl-C, "
        "or with --info print which binary contend would use, its version, and why the "
        "candidates before it were skipped.",
        formatter_class=HelpFormatter,
        epilog=exitcodes.epilog(),
    )
    parser.add_argument(
        "--info",
        action="store_true",
        help="print the binary, its version and the skipped ones; start nothing",
    )
    parser.add_argument("--redis-server", metavar="PATH", help="redis-server binary to use")
    parser.add_argument(
        "--persistence", choices=["none", "aof", "rdb"], default="none", help="persistence (default none)"
    )
    return parser


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    binary = find_redis_server(args.redis_server)
    if args.info:
        for line in info_lines(binary):
            out.print(escape(line), soft_wrap=True)
        return 0
    with EmbeddedRedis(binary, persistence=args.persistence) as server:
        out.print(escape(f"{server.describe()} · pid {server.pid} · {server.url}"), soft_wrap=True)
        out.print(escape(f"files in {server.dir}; Ctrl-C stops it and deletes them"), soft_wrap=True)
        while server.running:
            time.sleep(0.5)
        err.print(f"[red]redis-server exited on its own[/]; its log:\n{escape(server.log_tail())}")
        return 1


def info_lines(binary: RedisBinary) -> list[str]:
    """`--info`: the binary chosen, how it was found, and why each candidate before it was skipped."""
    lines = [
        f"binary:  {binary.path}",
        f"found:   {binary.source}",
        f"version: {binary.product} {binary.version}",
    ]
    if binary.skipped:
        lines += [skipped.describe() for skipped in binary.skipped]
        lines.append(
            f"using {binary.source}: the first candidate that runs on this machine ({host_platform()})"
        )
    return lines
