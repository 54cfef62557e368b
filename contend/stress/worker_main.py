"""A stress worker process's entry point: the implementation it runs, loaded in this process,
driven by the worker of its family (contend.stress.workers for registries and locks,
contend.stress.bank_worker for banks) until the run's deadline or a stop."""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

from contend.stress.bank_worker import TransactionWorker
from contend.stress.board import Board, Field, WorkerPhase
from contend.stress.workers import LockWorker, RegistryWorker, Worker, WorkerSpec
from contend.subject.multi_master import MULTI_MASTER_LOCKS
from contend.subject.resolve import load
from contend.subject.subject import catalog_implementation


def load_implementation(spec: WorkerSpec) -> tuple[str, Callable[..., Any]]:
    """(family, factory) of the implementation a worker runs: a catalog entry, or the user's
    `package.module:factory` imported in this process."""
    if spec.master_urls and spec.kind is None:
        return "lock", MULTI_MASTER_LOCKS[spec.impl].build
    if spec.code is None:
        impl = catalog_implementation(spec.impl)
        return impl.family, impl.factory
    subject = load(spec.code)
    return subject.family, subject.factory


def worker_main(spec: WorkerSpec, cells: Any, url_cells: Any) -> None:
    """A worker process's entry point: wait for the start, run until the deadline or a stop."""
    _die_with_parent(spec.parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    board = Board(spec.procs, cells, url_cells)
    family, factory = load_implementation(spec)
    if family == "transaction":
        worker: Worker = TransactionWorker(spec, board, factory)
    else:
        worker = (RegistryWorker if family == "registry" else LockWorker)(spec, board, factory)
    try:
        board.set(spec.index, Field.PHASE, WorkerPhase.IDLE)
        board.set(spec.index, Field.READY, 1)
        while not board.go and not board.stopped:
            time.sleep(0.002)
        deadline = worker.deadline = board.go + int(spec.duration * 1e9)
        while not board.stopped and time.monotonic_ns() < deadline:
            worker.follow_server()
            worker.step()
    finally:
        board.set(spec.index, Field.PHASE, WorkerPhase.DONE)
        worker.close()


def _die_with_parent(parent_pid: int) -> None:
    """Linux: SIGKILL this process when the parent dies, even by SIGKILL."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    if os.getppid() != parent_pid:
        os._exit(1)  # the parent died before we asked
