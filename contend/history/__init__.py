"""Recorded histories: records and their formats, the linearizability checker, invariants, timelines.

The front door: `check_file(path, model)` checks a history file against a model
named in the table (`MODELS`), as `contend history check` does; `check_calls`
checks paired calls against a model object; both answer with a `Verdict`.
"""

from contend.history.api import Checked, check_file
from contend.history.checker import check_calls, check_history
from contend.history.formats import read_history
from contend.history.models import MODELS
from contend.history.records import Call, HistoryError, Record, pair
from contend.history.verdict import Linearizability, Verdict

__all__ = [
    "MODELS",
    "Call",
    "Checked",
    "HistoryError",
    "Linearizability",
    "Record",
    "Verdict",
    "check_calls",
    "check_file",
    "check_history",
    "pair",
    "read_history",
]
