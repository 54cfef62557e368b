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
from contend.schedule.client import ClientCrashed, OperationResult, Status
from contend.schedule.scheduler import Scheduler, SchedulerError
from contend.schedule.trace import TraceEntry

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
