"""contend.commands.progress: plain lines and heartbeats off a terminal, nothing with --quiet."""

from __future__ import annotations

import io
import time

from rich.console import Console

from contend.commands import progress as progress_module
from contend.commands.progress import Reporter


def _plain() -> tuple[Console, io.StringIO]:
    buffer = io.StringIO()
    return Console(file=buffer, force_terminal=False, width=200), buffer


def test_a_line_per_finished_step_with_the_count_and_elapsed_time():
    console, buffer = _plain()
    with Reporter(console, "contend check", 2) as progress:
        progress.working("a · burst")
        progress.finished("a · burst: pass (0.1 s)")
        progress.status("not a step: no line")
        progress.finished("a · schedule: pass (0.2 s)")
    lines = buffer.getvalue().splitlines()
    assert [line.split(" · ", 3)[1] for line in lines] == ["1/2", "2/2"]
    assert lines[1].endswith("a · schedule: pass (0.2 s)") and lines[1].split(" · ")[2].endswith(" s")


def test_a_long_step_gets_heartbeats_naming_what_runs(monkeypatch):
    monkeypatch.setattr(progress_module, "HEARTBEAT_SECONDS", 0.2)
    console, buffer = _plain()
    with Reporter(console, "contend stress") as progress:
        progress.working("the linearizability search")
        deadline = time.monotonic() + 30  # two beats, however late a busy machine runs the thread
        while len(buffer.getvalue().splitlines()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
    beats = buffer.getvalue().splitlines()
    assert len(beats) >= 2 and all(b.endswith("running the linearizability search") for b in beats)


def test_quiet_and_terminal_modes_print_no_plain_lines(monkeypatch):
    monkeypatch.setattr(progress_module, "HEARTBEAT_SECONDS", 0.1)
    console, buffer = _plain()
    with Reporter(console, "x", 1, quiet=True) as progress:
        progress.finished("done")
        time.sleep(0.3)
    assert buffer.getvalue() == ""
    terminal = Console(file=io.StringIO(), force_terminal=True)
    with Reporter(terminal, "x", 1) as progress:
        assert progress.mode == "rich"
        progress.finished("done")
