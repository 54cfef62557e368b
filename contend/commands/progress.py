"""Progress of a long command on stderr: a Rich bar on a terminal, plain lines in a CI log.

On a terminal the bar redraws in place and is gone when the run ends. Anywhere else
(a pipe, a CI log) every finished step is one plain line with the elapsed time, and
while one step runs long a heartbeat line says what is running at least every
HEARTBEAT_SECONDS, so a log never goes quiet for minutes. `--quiet` silences both.
"""

from __future__ import annotations

import threading
import time
from types import TracebackType

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TaskID, TextColumn, TimeElapsedColumn

#: Longest silence in plain mode while something runs (CI logs show life at least this often).
HEARTBEAT_SECONDS = 8.0


def progress_bar(console: Console) -> Progress:
    """Description, bar, done/total and elapsed time; gone once the run ends (transient)."""
    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=True,
    )


class Reporter:
    """What a command tells about its progress: `working` (what runs now), `finished` (a step
    ended: a line in plain mode) and `status` (a running figure, printed now and then)."""

    def __init__(
        self, console: Console, label: str, total: int | None = None, *, quiet: bool = False
    ) -> None:
        self.console = console
        self.label = label
        self.total = total
        self.mode = "quiet" if quiet else ("rich" if console.is_terminal else "plain")
        self.done = 0
        self.current = ""
        self.started = time.monotonic()
        self._last_line = self.started
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._bar: Progress | None = None
        self._task: TaskID | None = None
        self._heart: threading.Thread | None = None

    def __enter__(self) -> Reporter:
        self.started = self._last_line = time.monotonic()
        if self.mode == "rich":
            self._bar = progress_bar(self.console)
            self._bar.__enter__()
            self._task = self._bar.add_task(self.label, total=self.total)
        elif self.mode == "plain":
            self._heart = threading.Thread(target=self._beat, name="contend-progress", daemon=True)
            self._heart.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if self._heart is not None:
            self._heart.join(timeout=1)
        if self._bar is not None:
            self._bar.__exit__(kind, exc, tb)

    def set_total(self, total: int) -> None:
        """The number of steps turned out different (some are known only once the run is under way)."""
        self.total = total
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, total=total)

    def working(self, text: str, *, done: int | None = None) -> None:
        """What runs now (and, optionally, how many steps are done)."""
        with self._lock:
            self.current = text
            if done is not None:
                self.done = done
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=text, completed=self.done)

    def finished(self, text: str) -> None:
        """One step ended: the bar advances; in plain mode, a line."""
        with self._lock:
            self.done += 1
        if self._bar is not None and self._task is not None:
            self._bar.update(self._task, description=text, completed=self.done)
        elif self.mode == "plain":
            self._line(text)

    def status(self, text: str, *, completed: float | None = None, every: float = HEARTBEAT_SECONDS) -> None:
        """A running figure: the bar shows it at once, plain mode at most once per `every` seconds."""
        with self._lock:
            self.current = text
        if self._bar is not None and self._task is not None:
            if completed is not None:
                self._bar.update(self._task, description=text, completed=completed)
            else:
                self._bar.update(self._task, description=text)
        elif self.mode == "plain" and time.monotonic() - self._last_line >= every:
            self._line(text)

    def _count(self) -> str:
        return f"{self.done}/{self.total} · " if self.total else ""

    def _line(self, text: str) -> None:
        with self._lock:
            now = time.monotonic()
            self._last_line = now
            line = f"{self.label} · {self._count()}{now - self.started:.1f} s · {text}\n"
            try:
                self.console.file.write(line)
                self.console.file.flush()
            except (OSError, ValueError):  # a closed pipe must not end the run
                pass

    def _beat(self) -> None:
        while not self._stop.wait(0.5):
            if time.monotonic() - self._last_line >= HEARTBEAT_SECONDS:
                self._line(f"running {self.current}" if self.current else "running")
