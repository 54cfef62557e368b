"""Deterministic interleaving of Redis round trips, chosen by Hypothesis (or PCT, or exhaustively)."""

from contend.schedule.choosers import (
    BoundedPreemption,
    Chooser,
    DrawChooser,
    PCTChooser,
    RandomWalk,
    ReplayChooser,
    ReplayDiverged,
)
from contend.schedule.scheduler import (
    ClientCrashed,
    OperationResult,
    Scheduler,
    SchedulerError,
    Status,
    TraceEntry,
)

__all__ = [
    "BoundedPreemption",
    "Chooser",
    "ClientCrashed",
    "DrawChooser",
    "OperationResult",
    "PCTChooser",
    "RandomWalk",
    "ReplayChooser",
    "ReplayDiverged",
    "Scheduler",
    "SchedulerError",
    "Status",
    "TraceEntry",
]
