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
from contend.errors import ContendError
from contend.servers.binary import RedisBinary, find_redis_server, host_platform
from contend.servers.clock import keeps_time
from contend.servers.cluster import MAX_MASTERS, MAX_REPLICAS, MIN_MASTERS, EmbeddedCluster
from contend.servers.server import EmbeddedRedis


def add_parser(sub: Any, common: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = sub.add_parser(
        "server",
        help=COMMANDS["server"],
        description="Start the embedded redis-server and keep it running until Ctrl-C, "
        "or with --info print which binary contend would use, its version, and why the "
        "candidates before it were skipped. With --cluster N, start N masters (and --replicas "
        "per master) in cluster mode, join them with CLUSTER ADDSLOTS and CLUSTER MEET, and "
        "print the URL cluster clients use (redis+cluster://127.0.0.1:PORT). Everything it "
        "started stops on Ctrl-C, SIGTERM, or when this process dies.",
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
    parser.add_argument(
        "--cluster",
        type=int,
        metavar="N",
        help=f"a Redis Cluster of N masters ({MIN_MASTERS} to {MAX_MASTERS}) instead of one server",
    )
    parser.add_argument(
        "--replicas",
        type=int,
        default=0,
        metavar="R",
        help=f"with --cluster: replicas per master (0 to {MAX_REPLICAS}, default 0)",
    )
    return parser


def run(args: argparse.Namespace, out: Console, err: Console) -> int:
    binary = find_redis_server(args.redis_server)
    if args.info:
        for line in info_lines(binary):
            out.print(escape(line), soft_wrap=True)
        return 0
    if args.cluster is None and args.replicas:
        raise ContendError("--replicas goes with --cluster N (replicas per master of a cluster)")
    if args.cluster is not None:
        return run_cluster(args, binary, out, err)
    with EmbeddedRedis(binary, persistence=args.persistence) as server:
        out.print(escape(f"{server.describe()} · pid {server.pid} · {server.url}"), soft_wrap=True)
        out.print(escape(f"files in {server.dir}; Ctrl-C stops it and deletes them"), soft_wrap=True)
        while server.running:
            time.sleep(0.5)
        err.print(f"[red]redis-server exited on its own[/]; its log:\n{escape(server.log_tail())}")
        return 1


def run_cluster(args: argparse.Namespace, binary: RedisBinary, out: Console, err: Console) -> int:
    """`--cluster N`: start and join the cluster, print its nodes and URL, wait for Ctrl-C."""
    if args.persistence != "none":
        raise ContendError("--persistence is for the single server; a cluster's nodes run without it")
    try:
        cluster = EmbeddedCluster(args.cluster, args.replicas, binary)
    except ValueError as exc:
        raise ContendError(f"--cluster {args.cluster}: {exc}") from None
    with cluster:
        out.print(
            escape(
                f"{cluster.describe()} · started in {cluster.started_in:.2f} s, "
                f"joined in {cluster.joined_in:.2f} s"
            ),
            soft_wrap=True,
        )
        for k, (first, last) in enumerate(cluster.slot_ranges()):
            node = cluster.masters[k]
            out.print(escape(f"master  {node.host}:{node.port} · pid {node.pid} · slots {first}-{last}"))
        for k, node in enumerate(cluster.replicas):
            master = cluster.masters[k % len(cluster.masters)]
            out.print(escape(f"replica {node.host}:{node.port} · pid {node.pid} · of {master.port}"))
        out.print(escape(f"url: {cluster.url}  (contend --redis-url, or redis-py's RedisCluster)"))
        out.print("Ctrl-C stops every node and deletes their files")
        while cluster.running:
            time.sleep(0.5)
        gone = [node for node in cluster.nodes if not node.running]
        err.print(
            f"[red]a cluster node exited on its own[/] (port {gone[0].port if gone else '?'}); its log:\n"
            f"{escape(gone[0].log_tail() if gone else '')}"
        )
        return 1


def info_lines(binary: RedisBinary) -> list[str]:
    """`--info`: the binary chosen, how it was found, and why each candidate before it was skipped."""
    lines = [
        f"version: {binary.product} {binary.version}",
        f"binary:  {binary.path}",
        f"found:   {binary.source}",
    ]
    if binary.skipped:
        lines += [skipped.describe() for skipped in binary.skipped]
        lines.append(
            f"using {binary.source}: the first candidate that runs on this machine ({host_platform()})"
        )
    why_not = keeps_time(str(binary.path), binary.product)
    lines.append(
        f"clock:   {'keeps' if not why_not else 'cannot keep'} contend's virtual clock (libfaketime preloaded)"
        + (f": {why_not}; contend check uses another binary, or refuses with the fix" if why_not else "")
    )
    return lines
