"""argparse types the subcommands share."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from contend.values import BadValue, positive_number, positive_whole, whole_list


def positive_int(text: str) -> int:
    """argparse type: a whole number > 0 (contend.values.positive_whole)."""
    try:
        return positive_whole(text, "")
    except BadValue as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def non_negative_int(text: str) -> int:
    """argparse type: a whole number >= 0."""
    try:
        return positive_whole(text, "") if text.strip() != "0" else 0
    except BadValue:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}") from None


def positive_float(text: str) -> float:
    """argparse type: a number > 0 (contend.values.positive_number)."""
    try:
        return positive_number(text, "")
    except BadValue as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_ints(text: str) -> list[int]:
    """argparse type: whole numbers > 0 separated by commas (contend.values.whole_list)."""
    try:
        return whole_list(text, "the list")
    except BadValue as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, but a paragraph whose lines are indented (a table, a list of
    models) is printed as written, and blank lines separate paragraphs."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        paragraphs = []
        for block in text.split("\n\n"):
            lines = block.splitlines()
            if len(lines) > 1 and any(line.startswith("  ") for line in lines):
                paragraphs.append("\n".join(indent + line for line in lines))
            else:
                paragraphs.append(super()._fill_text(" ".join(lines), width, indent))
        return "\n\n".join(paragraphs)


#: Spellings given up in this release: accepted, with a warning, until the next one.
RENAMED_NOTE = "accepted with a warning until the next release"


def warn_renamed(old: str, new: str) -> None:
    """Say once, on stderr and as plain text, that a spelling is deprecated and what replaces it."""
    if (old, new) in _warned:
        return
    _warned.add((old, new))
    sys.stderr.write(f"contend: warning: {old} is deprecated, use {new} ({RENAMED_NOTE})\n")


_warned: set[tuple[str, str]] = set()


def add_renamed(parser: argparse.ArgumentParser | Any, new: str, *old: str, **kwargs: Any) -> argparse.Action:
    """add_argument(new, **kwargs), plus the old spellings `old`: hidden from --help, stored in
    the same place, and warned about when used."""
    action = parser.add_argument(new, **kwargs)
    base = parser._registry_get("action", kwargs.get("action"), kwargs.get("action"))
    if not isinstance(base, type):
        base = parser._registry_get("action", None, None)

    class Renamed(base):  # type: ignore[misc, valid-type]
        def __call__(self, p: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
            warn_renamed(option_string or old[0], new)
            super().__call__(p, namespace, values, option_string)

    hidden = {k: v for k, v in kwargs.items() if k not in ("help", "default", "required", "action")}
    parser.add_argument(
        *old, action=Renamed, dest=action.dest, help=argparse.SUPPRESS, default=argparse.SUPPRESS, **hidden
    )
    return action


def renamed_value(new_by_old: dict[str, str], option: str) -> Any:
    """argparse type for a choice whose spelling changed: an old value warns and becomes the new one."""

    def convert(text: str) -> str:
        if text in new_by_old:
            warn_renamed(f"{option} {text}", f"{option} {new_by_old[text]}")
            return new_by_old[text]
        return text

    return convert
