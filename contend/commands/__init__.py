"""One module per `contend` subcommand.

Each has `add_parser(subparsers, common) -> ArgumentParser`, where `common` is
the parent parser with the server options (--redis-url, --redis-server,
--namespace), and `run(args, out, err) -> int` returning the exit code.
"""

from __future__ import annotations

import argparse


def positive_int(text: str) -> int:
    """argparse type: a whole number > 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {value}")
    return value


def positive_float(text: str) -> float:
    """argparse type: a number > 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be > 0, got {text}")
    return value
