"""The consoles `contend` prints to: a terminal keeps its width; a pipe or log keeps every word.

Piped (stdout or stderr not a terminal, and no $COLUMNS), text wraps at LOG_WIDTH, but a table,
or a group of tables, is printed at its natural width however wide that is: a name is never cut
to "setnx_ge…" and a column never wraps over three lines, so a log or a grep sees whole records.
Neither turns `:name:` into an emoji: evidence quotes keys such as `sem:seat:1` as they are.
"""

from __future__ import annotations

import os
from typing import Any, TextIO

from rich.console import Console
from rich.measure import Measurement

#: Width for logs and pipes (CI) of everything but tables, which take what they need.
LOG_WIDTH = 160
#: The widest a table may grow when piped: wider than any contend prints.
WIDEST = 100_000


class PipeConsole(Console):
    """A console for pipes and logs: tables at their natural width, never cut or wrapped."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        widest = max((self._natural_width(o) for o in objects if not isinstance(o, str)), default=0)
        if widest <= self.width:
            super().print(*objects, **kwargs)
            return
        kept = self.width  # print's own width= may only narrow the console's
        self.width = widest
        try:
            super().print(*objects, **kwargs)
        finally:
            self.width = kept

    def _natural_width(self, renderable: Any) -> int:
        options = self.options.update(width=WIDEST, max_width=WIDEST)
        return Measurement.get(self, options, renderable).maximum


def make_console(stream: TextIO, **kwargs: Any) -> Console:
    """A terminal's console at its own width (or $COLUMNS); a pipe's at LOG_WIDTH, tables whole."""
    if not stream.isatty() and "COLUMNS" not in os.environ:
        return PipeConsole(highlight=False, emoji=False, width=LOG_WIDTH, **kwargs)
    return Console(highlight=False, emoji=False, **kwargs)
