"""The subcommands, in `contend --help` order, with their one-line help.

Kept apart from the command modules so that the CLI imports only the module
of the command it runs: `contend history check` does not pay for redis-py,
Hypothesis or Locust.
"""

from __future__ import annotations

#: Command name → its line in `contend --help`.
COMMANDS: dict[str, str] = {
    "check": "run the correctness battery over every implementation, or over yours (--impl)",
    "scoreboard": "judge Python libraries' Redis locks, semaphores, queues and ID allocators, each in its own environment",
    "bench": "measure throughput as ratios to raw Redis round trips",
    "server": "run the embedded redis-server in the foreground, or show which binary is used",
    "history": "check a recorded history (JSONL, Jepsen EDN or log) for linearizability",
    "stress": "run N worker processes against one implementation, inject faults, check the history",
    "load": "sweep Locust over strategies × users × hot keys and write the contention report",
    "report": "write the contention report of a `contend load` sweep",
    "hunt": "how reliably and how fast the state machines catch each known-bad implementation",
    "sentinel": "measure Sentinel failovers: the time to promote the replica, acknowledged writes lost",
    "redlock": "search Redlock over five masters restarted empty for Kleppmann's counterexample, fenced or not",
}
