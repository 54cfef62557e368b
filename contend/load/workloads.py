"""The load-test workloads and the strategies each is run with, free of Locust.

A workload sets its keys up before a run (`setup`), builds one operation per
simulated user (`operation`), and checks its invariant after the run
(`check`) from what Redis holds and what the users tallied:

* registry: register a new name with the registry strategies of
  `impl.registry` (watch, lock_first, lua); ids must stay unique and gap-free.
* counter: seed 002's `ham`, a read-modify-write increment: WATCH, lock-first
  with each correct lock of the catalog, and INCR / a Lua script as the
  ceiling; every counter must equal the increments that succeeded.
* transfer: move an amount between two accounts, in the spirit of Redis in
  Action's marketplace: the transaction family's banks (WATCH, lock-first,
  Lua), one coarse lock, a lock per account; the total must be conserved.
* limiter: hit a rate-limited key with each correct limiter of the catalog (or
  the user's `--kind rate-limiter`); every decision is an operation, and no key
  may admit more than its limit allows over the run (contend.load.limiter).
* jobs: put a job, take the next and ack it, with the catalog's correct
  queues (list, stream); nothing lost, nothing completed twice.

A user's own implementation (`--impl package.module:factory --kind K`, the
protocols of `contend.subject.protocols`) runs as one more strategy, named by its
spec: a lock protects the counter's and the transfer's read-modify-write (a
lock per account, taken in key order), so a lock that lets two clients in shows
as lost increments or money not conserved; a registry takes the registry
workload's registrations, on names the users of one process register at the
same moment, and is judged through its own `count`, `reverse` and `lookup`.

What a workload is, and the user's code as a strategy: contend.load.workload;
the workloads: contend.load.counter, .registry and .transfer; this module
lists them. `hot_keys` is how many distinct keys the users fight over (1: all on one).
Known-bad implementations stay out of load runs; setting CONTEND_LOAD_KNOWN_BAD=1
adds a few to the counter workload, so a test can show a broken run fails.
"""

from __future__ import annotations

from contend.load.counter import CounterWorkload
from contend.load.limiter import LimiterWorkload
from contend.load.queue import QueueWorkload
from contend.load.registry import RegistryWorkload
from contend.load.transfer import TransferWorkload
from contend.load.workload import LoadInputError, LoadWorkload

WORKLOADS: dict[str, LoadWorkload] = {
    w.name: w
    for w in (RegistryWorkload(), CounterWorkload(), TransferWorkload(), LimiterWorkload(), QueueWorkload())
}


def workload(name: str) -> LoadWorkload:
    """The workload called `name`; LoadInputError listing the known ones."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise LoadInputError(f"no workload called {name!r}; pick one of: {', '.join(WORKLOADS)}") from None
