"""One module per `contend` subcommand.

Each has `add_parser(subparsers, common) -> ArgumentParser`, where `common` is
the parent parser with the server options (--redis-url, --redis-server,
--namespace), and `run(args, out, err) -> int` returning the exit code.
Argument types shared by several commands are in `contend.commands.arguments`.
"""
