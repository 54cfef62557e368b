"""Signals to the processes of a stress run: a worker or a server, stopped and resumed."""

from __future__ import annotations

import os
import signal
import time


def signal_process(pid: int, sig: signal.Signals) -> bool:
    """Send `sig` to `pid`; False when the process is gone."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def wait_stopped(pid: int, timeout: float = 0.5) -> bool:
    """Linux: wait until the kernel shows `pid` stopped (state T), so what it shows us is final."""
    stat = f"/proc/{pid}/stat"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(stat) as f:
                state = f.read().rpartition(")")[2].split()[0]
        except (OSError, IndexError):
            time.sleep(0.005)  # no /proc: give the signal a moment
            return True
        if state in ("T", "t"):
            return True
        if state in ("Z", "X"):
            return False
        time.sleep(0.0005)
    return False
