"""contend.machines.transactions: the conflict graph on real round trips under the scheduler."""

from __future__ import annotations

import pytest

from contend.history.isolation import LOST_UPDATE, RoundTrip, check_serializable
from contend.impl.catalog import CONSISTENT_AUDIT, SERIALIZABLE, by_name
from contend.impl.transactions import NoWatchBank, WatchBank
from contend.machines.base import PropertyViolated
from contend.machines.family import family_machine
from contend.machines.hunt import run_once
from contend.machines.transactions import server_table
from contend.schedule import Scheduler
from contend.subject.resolve import user_subject
from tests.machines.helpers import driven_by_hand


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


@pytest.fixture
def _notes_outside_hypothesis(monkeypatch):
    monkeypatch.setattr("contend.machines.base.note", lambda text: None)


def foreign_machine(module: str, target):
    """The transaction machine on a foreign bank (tests/fixtures/foreign), as `--impl` loads it."""
    subject = user_subject(f"tests.fixtures.foreign.{module}:make", "transaction", target)
    return family_machine(subject)(target)


def transfer(m, client: int, src: int, offset: int, amount: int) -> None:
    """Client `client` (while it is the first idle one... any idle: by its index) starts a transfer."""
    m.begin(client=m.idle_clients().index(client), audit=False, src=src, offset=offset, amount=amount)


def audit(m, client: int) -> None:
    m.begin(client=m.idle_clients().index(client), audit=True, src=0, offset=1, amount=3)


def step(m, client: int, times: int = 1) -> None:
    for _ in range(times):
        m.before_step(client)
        m.scheduler.step(client)
        m._after_progress(client)


@pytest.mark.usefixtures("_notes_outside_hypothesis")
def test_guard_then_debit_is_write_skew_under_an_overdraft_guard(contend_target):
    """Two transfers out of a, each GET a (10) and find room for 10; both DECRBY a: a at -10."""
    with driven_by_hand(foreign_machine("guard_debit_bank", contend_target)) as m:
        transfer(m, 0, src=0, offset=1, amount=10)  # a -> b
        transfer(m, 1, src=0, offset=2, amount=10)  # a -> c
        step(m, 0, 2)  # GET a; EXISTS b
        step(m, 1, 2)
        step(m, 0)  # MULTI DECRBY a INCRBY b EXEC: T1 done
        with pytest.raises(PropertyViolated) as info:
            step(m, 1)
    assert info.value.property == SERIALIZABLE
    assert info.value.detail.startswith(
        "write skew under an overdraft guard (G2-item): each operation checked a balance before "
        "another debited it, and debited it too: the check guarded nothing: "
        "T1 -rw(account:a)-> T2 -rw(account:a)-> T1"
    ), info.value.detail


@pytest.mark.usefixtures("_notes_outside_hypothesis")
def test_a_debit_whose_client_dies_before_the_credit_is_a_money_moving_crash(contend_target):
    with driven_by_hand(foreign_machine("two_step_bank", contend_target)) as m:
        transfer(m, 0, src=0, offset=1, amount=3)  # a -> b
        step(m, 0)  # the debit script
        m.crash(_Drawn(0))  # before the credit
        audit(m, 1)
        step(m, 1)  # MGET: a 7, b 10, c 10
        with pytest.raises(PropertyViolated) as info:
            m.check_quiescent()
    assert info.value.property == CONSISTENT_AUDIT
    assert info.value.detail.startswith(
        "money-moving crash: T1 transfer('a', 'b', 3) crashed after the server ran its write to a "
        "and before any to b; T2 balances(['a', 'b', 'c']): an audit saw"
    ), info.value.detail


@pytest.mark.usefixtures("_notes_outside_hypothesis")
def test_an_audit_between_the_debit_and_the_credit_is_read_skew_once_the_credit_ran(contend_target):
    with driven_by_hand(foreign_machine("two_step_bank", contend_target)) as m:
        transfer(m, 0, src=0, offset=1, amount=3)
        step(m, 0)  # debit a
        audit(m, 1)
        step(m, 1)  # the audit sees a debited, b not yet credited: no cycle yet, nothing reported
        assert m.broken_audit and not m.failed
        with pytest.raises(PropertyViolated) as info:
            step(m, 0)  # the credit: now the graph has a cycle, and that is the finding
    assert info.value.property == SERIALIZABLE
    assert info.value.detail.startswith("read skew (G-single): "), info.value.detail
    assert "T2 -rw(b)-> T1 -wr(a)-> T2" in info.value.detail


@pytest.mark.parametrize("module", ["script_read_bank", "dotted_bank", "noisy_bank"])
def test_a_correct_bank_in_another_style_is_judged_on_every_key_it_touched(module, contend_target):
    """Two transfers and an audit interleaved round trip by round trip: no violation, and the data
    keys are the accounts `open` wrote, whatever their names."""
    with driven_by_hand(foreign_machine(module, contend_target)) as m:
        assert len(m.data_keys) == 3 and all(m.ns.prefix in k for k in m.data_keys)
        transfer(m, 0, src=0, offset=1, amount=10)
        transfer(m, 1, src=0, offset=2, amount=10)
        audit(m, 2)
        for _ in range(40):
            for client in (0, 1, 2):
                if client in m.scheduler.runnable():
                    step(m, client)
        m.check_quiescent()
        assert not m.failed and m.record is not None
        assert m.record_seconds > 0 and not m._unplaced


class _Drawn:
    """A stand-in for Hypothesis's `data` in a rule that draws one value: it gives `value`."""

    def __init__(self, value):
        self.value = value

    def draw(self, strategy, label=None):
        return self.value
