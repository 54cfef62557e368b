"""The parent's side of a transaction stress run: the server's record, the opening, the final read
and the verdict (`BankRun`).

Before any worker starts, the parent opens MONITOR on the server (contend.stress.monitor), reads
the server's command table once, and opens the accounts between markers; once the workers have
stopped it reads the final balances, stops the record, sorts what the server ran to the
operations (contend.stress.attribution) and judges it (contend.stress.bank_check).

On a server contend started the record is the embedded server's own. On one given by --redis-url
MONITOR is used too (it slows that server while the run lasts, and its ACLs may refuse it: the
graph then judges nothing and says so); the commands judged are still only those of the run's
connections, which mark themselves.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import redis

from contend.history.access import CommandTable
from contend.history.records import Call
from contend.servers.record import command_table, get_keys
from contend.stress.attribution import read_record
from contend.stress.bank_check import TransactionJudgement, judge_run
from contend.stress.bank_worker import ACCOUNTS, open_accounts
from contend.stress.monitor import MonitorRecord
from contend.stress.workers import connect


class BankRun:
    """The record, the table and the final balances of one transaction run."""

    def __init__(self, url: str, run_dir: Path, owned: bool) -> None:
        self.url = url
        self.path = run_dir / "monitor.log"
        self.owned = owned
        self.monitor: MonitorRecord | None = None
        self.table: CommandTable | None = None
        self.final: dict[str, int] | None = None
        self.final_error = ""

    @property
    def source(self) -> str:
        where = "the embedded server" if self.owned else "the --redis-url server"
        return f"judged from the MONITOR stream of {where}"

    def start(self, client: redis.Redis, factory: Callable[..., Any], namespace: str) -> None:
        """Record from now on, read the command table, open the accounts."""
        self.monitor = MonitorRecord(self.url, self.path).start()
        self.table = CommandTable(command_table(client), lambda args: get_keys(client, args))
        open_accounts(client, factory, namespace)

    def read_final(self, factory: Callable[..., Any], namespace: str, op_timeout: float) -> None:
        """The balances once every worker has stopped (None, and why, when they cannot be read)."""
        client = connect(self.url, max(op_timeout, 2.0))
        try:
            got = factory(client, namespace).balances(list(ACCOUNTS))
            self.final = {str(k): int(v) for k, v in dict(got).items()}
        except Exception as exc:
            self.final_error = f"{type(exc).__name__}: {exc}"
        finally:
            client.close()

    def stop(self) -> None:
        if self.monitor is not None:
            self.monitor.stop()

    def judge(self, calls: Sequence[Call], budget: float, namespace: str) -> TransactionJudgement:
        """The verdict; the record is kept beside the history (monitor.log)."""
        record = table = None
        why = ""
        if self.monitor is None or not self.monitor.active:
            why = self.monitor.refused if self.monitor is not None else "the run ended before it began"
        else:
            record, table = read_record(self.path), self.table
        judged = judge_run(
            calls,
            record,
            table,
            self.final,
            source=self.source,
            namespace=namespace,
            why_no_record=why,
            budget=budget,
        )
        if self.final is None and self.final_error:
            judged.unjudged[-1] += f" ({self.final_error})"
        return judged

    def discard(self) -> None:
        with contextlib.suppress(OSError):
            self.path.unlink()
