"""contend.machines.transactions: the conflict graph on real round trips under the scheduler."""

from __future__ import annotations

from contend.history.isolation import LOST_UPDATE, RoundTrip, check_serializable
from contend.impl.catalog import SERIALIZABLE, by_name
from contend.impl.transactions import NoWatchBank, WatchBank
from contend.machines.family import family_machine
from contend.machines.hunt import run_once
from contend.machines.transactions import server_table
from contend.schedule import Scheduler


def round_robin(bank_type, contend_target, ns, transfers: int = 4):
    """Three clients moving money a -> b, each taking one round trip in turn: every WATCH attempt
    but one per round is aborted by another client's EXEC."""
    opener = bank_type(contend_target.client(), ns.prefix)
    opener.open("a", 100)
    opener.open("b", 0)
    banks = []
    with Scheduler() as scheduler:
        for _ in range(3):
            conn = contend_target.client()
            conn.ping()
            scheduler.add_client(connection=conn)
            banks.append(bank_type(conn, ns.prefix))
        runs = [0, 0, 0]
        for turn in range(400):
            for i, bank in enumerate(banks):
                if scheduler.idle(i) and runs[i] < transfers:
                    runs[i] += 1
                    scheduler.start(i, lambda bank=bank: bank.transfer("a", "b", 5), f"T{i}.{runs[i]}")
            ready = scheduler.runnable()
            if not ready:
                break
            scheduler.step(ready[turn % len(ready)])
        trips, current = [], {}
        for entry in scheduler.trace:
            if entry.note.startswith("starts "):
                current[entry.client] = entry.note.split()[1]
            if not entry.sent:
                continue
            trips.append(
                RoundTrip(current.get(entry.client, entry.client), entry.index, entry.sent, entry.replies)
            )
    return banks, trips, opener.balances(["a", "b"])


def test_watch_retries_under_heavy_contention_show_no_cycle(contend_target, ns):
    banks, trips, balances = round_robin(WatchBank, contend_target, ns)
    assert sum(b.conflicts for b in banks) >= 3  # EXECs aborted and retried
    assert check_serializable(trips, server_table(contend_target)) is None
    assert balances == {"a": 40, "b": 60}


def test_the_same_schedule_without_watch_is_a_lost_update(contend_target, ns):
    _, trips, balances = round_robin(NoWatchBank, contend_target, ns)
    cycle = check_serializable(trips, server_table(contend_target))
    assert cycle is not None and cycle.anomaly == LOST_UPDATE
    assert balances != {"a": 40, "b": 60}


def test_the_machine_names_the_anomaly_of_a_known_bad_bank(contend_target):
    impl = by_name("transfer_no_watch")
    _, violation, _ = run_once(family_machine(impl), contend_target, seed=0, max_examples=300, shrink=False)
    assert violation is not None and violation.property == SERIALIZABLE
    assert violation.detail.startswith(impl.anomaly) and " -rw(acct:" in violation.detail
