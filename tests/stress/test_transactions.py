"""`contend stress` on banks: the server's MONITOR stream sorted to the operations, judged.

The attribution is tested on a recorded stream written out as the server prints it (so the
outcome is exact: a lost update forced line by line, a cut that sets an operation aside, a
script's commands following its EVALSHA); the runs show that the known-bad bank is caught and
named, a correct one stays valid under a server kill, and bad input is one line.
"""

from __future__ import annotations

import json

import pytest

from contend.cli import main
from contend.history.access import CommandTable
from contend.history.records import make_record, pair
from contend.impl.catalog import APPLIES_ONCE, CONSISTENT_AUDIT, SERIALIZABLE
from contend.servers.record import command_table, get_keys
from contend.stress.attribution import attribute
from contend.stress.bank_check import judge_run
from contend.stress.options import StressOptions
from contend.stress.run import run_stress
from tests.stress.test_run import assert_nothing_left

NS = "ns"
A, B = f"{NS}:{{bank}}:acct:a", f"{NS}:{{bank}}:acct:b"
HARNESS, P0, P1 = "127.0.0.1:1000", "127.0.0.1:1001", "127.0.0.1:1002"


def line(client: str, *args: str) -> bytes:
    quoted = " ".join('"' + a.replace('"', '\\"') + '"' for a in args)
    return f"+1795952851.000001 [0 {client}] {quoted}".encode()


OPENING = [
    line(HARNESS, "EVAL", "return redis.call('ECHO', ARGV[1])", "0", "contend-probe:scripts"),
    line("lua", "ECHO", "contend-probe:scripts"),
    line(HARNESS, "ECHO", "contend-open:a"),
    line(HARNESS, "SET", A, "10"),
    line(HARNESS, "ECHO", "contend-open:b"),
    line(HARNESS, "SET", B, "10"),
    line(HARNESS, "ECHO", "contend-open:"),
    line(P0, "ECHO", "contend-conn:0"),
    line(P1, "ECHO", "contend-conn:1"),
]
#: Two transfers of 3 from a to b, each reading both balances before either writes (no WATCH).
LOST_UPDATE = [
    line(P0, "ECHO", "contend-op:0:0"),
    line(P1, "ECHO", "contend-op:1:0"),
    line(P0, "MGET", A, B),
    line(P1, "MGET", A, B),
    line(HARNESS, "GET", f"{NS}:elsewhere"),  # a connection that named no process: no operation's
    *(line(P0, *c) for c in (("MULTI",), ("SET", A, "7"), ("SET", B, "13"), ("EXEC",))),
    *(line(P1, *c) for c in (("MULTI",), ("SET", A, "7"), ("SET", B, "13"), ("EXEC",))),
]


def history(*ops: tuple[int, int, int]) -> list:
    """Transfers of 3 from a to b: (process, invoke time, completion time), each ok True."""
    docs = []
    for process, start, end in ops:
        docs.append(
            {"process": process, "type": "invoke", "f": "transfer", "value": ["a", "b", 3], "time": start}
        )
        docs.append({"process": process, "type": "ok", "f": "transfer", "value": True, "time": end})
    docs.sort(key=lambda d: d["time"])
    return pair([make_record(d, i, i + 1, "history.jsonl") for i, d in enumerate(docs)]).calls


@pytest.fixture
def table(contend_target) -> CommandTable:
    client = contend_target.client()
    yield CommandTable(command_table(client), lambda args: get_keys(client, args))
    client.close()


def test_each_command_goes_to_the_operation_of_its_process_and_marker():
    lua = [
        line(P0, "ECHO", "contend-op:0:1"),
        line(P0, "EVALSHA", "abc", "2", A, B, "3"),
        line("lua", "GET", A),
        line("lua", "DECRBY", A, "3"),
        line(P1, "GET", A),  # process 1's operation 0 goes on
    ]
    record = attribute([*OPENING, *LOST_UPDATE, *lua])
    assert record.shows_scripts
    assert [r.args for r in record.opening["a"]] == [("SET", A, "10")]
    assert [r.args[0] for _, r in record.ops[(0, 0)]] == ["MGET", "MULTI", "SET", "SET", "EXEC"]
    assert [r.args for _, r in record.ops[(0, 1)]] == [
        ("EVALSHA", "abc", "2", A, B, "3"),
        ("GET", A),
        ("DECRBY", A, "3"),
    ]
    assert record.ops[(1, 0)][-1][1].args == ("GET", A)
    assert record.unplaced == 2  # the harness's probe EVAL (before the opening) and its GET
    positions = [p for op in record.ops.values() for p, _ in op]
    assert len(set(positions)) == len(positions)  # one place in the server's order each


def test_a_marker_that_runs_late_does_not_take_the_next_operations_commands():
    # Operation 0's marker timed out (the server was paused) and ran after operation 1's, which
    # went on through a new connection: operation 1's GET stays operation 1's.
    late = [
        line(P0, "ECHO", "contend-op:0:1"),
        line("127.0.0.1:1003", "ECHO", "contend-op:0:0"),
        line(P0, "GET", A),
    ]
    record = attribute([*OPENING, *late])
    assert [r.args for _, r in record.ops[(0, 1)]] == [("GET", A)] and (0, 0) not in record.ops


def test_a_lost_update_in_the_record_is_named(table):
    calls = history((0, 10, 30), (1, 11, 31))
    judged = judge_run(calls, attribute([*OPENING, *LOST_UPDATE]), table, None, source="test", namespace=NS)
    (serializable, audit_free) = judged.violations[0], judged.violations[1:]
    assert serializable.check == SERIALIZABLE and judged.cycle is not None
    assert judged.cycle.anomaly == "lost update"
    assert "-rw(acct:a)->" in judged.cycle.path() and "-ww(acct:a)->" in judged.cycle.path()
    assert not audit_free  # no audit ran; the final balances were not read:
    assert judged.unjudged == ["the final balances could not be read: applies-once not judged"]
    assert judged.exit_code == 1


def test_a_paused_operations_lost_update_is_named_though_many_accesses_lie_between(table):
    """Process 0 reads, stalls while process 1 runs 80 transfers (160 accesses of a: more than twice the
    judge's reach), then writes what it read: still the two-edge cycle of a lost update."""

    def transfer(process: int, n: int, client: str, balance: int) -> list[bytes]:
        return [
            line(client, "ECHO", f"contend-op:{process}:{n}"),
            line(client, "MGET", A, B),
            *(line(client, *c) for c in (("MULTI",), ("SET", A, str(balance)), ("SET", B, "0"), ("EXEC",))),
        ]

    stalled = transfer(0, 0, P0, 7)
    stream = [*OPENING, *stalled[:2], *(c for n in range(80) for c in transfer(1, n, P1, 10)), *stalled[2:]]
    ops = [(0, 10, 1000)] + [(1, 20 + 10 * n, 25 + 10 * n) for n in range(80)]
    judged = judge_run(history(*ops), attribute(stream), table, None, source="test")
    assert judged.cycle is not None and judged.cycle.anomaly == "lost update", judged.summary()


def test_a_final_balance_no_serial_order_explains_is_applies_once(table):
    calls = history((0, 10, 30), (1, 11, 31))
    judged = judge_run(
        calls, attribute([*OPENING, *LOST_UPDATE]), table, {"a": 7, "b": 13, "c": 10}, source="test"
    )
    assert [v.check for v in judged.violations] == [SERIALIZABLE, APPLIES_ONCE]
    assert "money was made or lost" not in judged.violations[1].message  # the sum holds: 30
    assert "not the opening ones plus each completed transfer once" in judged.violations[1].message


def test_an_operation_in_flight_while_the_record_was_cut_is_set_aside_not_accused(table):
    # The same lines, but the record was cut while process 1's transfer ran: what it ran may be
    # missing, so the graph does not judge it (no false alarm), and says so.
    p0 = [LOST_UPDATE[0], LOST_UPDATE[2], *LOST_UPDATE[5:9]]  # marker, MGET, MULTI SET SET EXEC
    p1 = [LOST_UPDATE[1], LOST_UPDATE[3], *LOST_UPDATE[9:]]
    stream = [*OPENING, p1[0], p1[1], *p0, b"#cut 12 25", *p1[2:]]
    record = attribute(stream)
    assert record.cuts == [(12, 25)]
    assert (1, 0) in record.ops and record.unplaced == 1 + 4  # the probe; p1's block after the cut
    judged = judge_run(history((0, 5, 11), (1, 4, 31)), record, table, None, source="test")
    assert judged.cycle is None and judged.set_aside == 1 and judged.judged == 1
    assert not [v for v in judged.violations if v.check == SERIALIZABLE]
    assert "1 operation(s) in flight while the record was cut (1 cut(s)) set aside" in judged.summary()


def test_no_record_is_inconclusive_and_says_why(table):
    judged = judge_run(
        history((0, 10, 30)), None, None, {"a": 7, "b": 13, "c": 10}, source="t", why_no_record="NOPERM"
    )
    assert judged.exit_code == 3 and "NOPERM" in judged.unjudged[0]


# --------------------------------------------------------------------------- runs


@pytest.mark.slow
def test_transfer_no_watch_is_caught_as_a_lost_update(tmp_path):
    result = run_stress(
        StressOptions(impl="transfer_no_watch", procs=3, duration=1.0, out=tmp_path, html=False)
    )
    assert_nothing_left(result.run_dir)
    assert result.exit_code == 1
    assert result.judgement is not None and result.judgement.cycle is not None
    assert result.judgement.cycle.anomaly == "lost update"
    assert result.violations[0].check == SERIALIZABLE
    assert {v.check for v in result.violations} >= {SERIALIZABLE, CONSISTENT_AUDIT}
    assert result.headline().startswith("VIOLATION — serializable: lost update (G-single)")
    assert (result.run_dir / "monitor.log").exists()


@pytest.mark.slow
def test_a_users_bank_with_keys_outside_the_namespace_is_judged(tmp_path):
    """dotted_bank keeps its balances at `<namespace>.accounts.<account>`: they are the keys its
    opening wrote, so the graph judges them (it is correct: valid, with conflicts judged)."""
    spec = "tests.fixtures.foreign.dotted_bank:make"
    options = StressOptions(impl=spec, kind="transaction", procs=2, duration=1.0, out=tmp_path, html=False)
    result = run_stress(options)
    assert_nothing_left(result.run_dir)
    assert result.exit_code == 0, result.headline()
    assert result.workload.user and result.workload.family == "transaction"
    assert result.judgement is not None and result.judgement.edges > 0
    assert result.judgement.judged == result.counts["ok"]


@pytest.mark.slow
def test_on_a_server_contend_did_not_start_the_stream_is_read_and_said_so(tmp_path, contend_target):
    options = StressOptions(
        impl="transfer_no_watch",
        procs=3,
        duration=1.0,
        out=tmp_path,
        html=False,
        redis_url=contend_target.url,
    )
    result = run_stress(options)
    assert result.exit_code == 1 and result.judgement is not None
    assert result.judgement.cycle is not None and result.judgement.cycle.anomaly == "lost update"
    assert "the MONITOR stream of the --redis-url server" in result.judgement.summary()
    client = contend_target.client()
    try:
        assert not client.keys(f"contend:{result.run_dir.name.removeprefix('stress-')}*")  # cleaned up
    finally:
        client.close()


@pytest.mark.slow
def test_bank_lua_stays_valid_through_server_kills(tmp_path):
    """The record is cut at each kill: the operations in flight then are set aside, the rest
    judged (with AOF the accounts survive, so the final balances are judged too)."""
    code = main(
        [
            "stress", "--only", "bank_lua", "--processes", "3", "--duration", "2.5",
            "--nemesis", "server-kill", "--persistence", "aof", "--out", str(tmp_path / "runs"),
            "--no-html", "--json", str(tmp_path / "doc.json"),
        ]
    )  # fmt: skip
    doc = json.loads((tmp_path / "doc.json").read_text())
    (run_dir,) = (tmp_path / "runs").iterdir()
    assert_nothing_left(run_dir)
    assert code == 0, doc["violations"] or doc["serializability"]
    assert doc["family"] == "transaction" and doc["verdict"] == "valid"
    judged = doc["serializability"]
    assert judged["cuts"] >= 1 and judged["judged"] > 0 and judged["edges"] > 0
    assert doc["invariants"] == [SERIALIZABLE, CONSISTENT_AUDIT, APPLIES_ONCE]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--only", "bank_watch", "--nemesis", "failover"],
            "a transaction run takes client-pause, server-pause, server-kill",
        ),
        (
            ["--only", "bank_watch", "--cluster", "3"],
            "a transaction stress run reads one server's MONITOR stream",
        ),
        (
            ["--impl", "tests.fixtures.async_foreign.watch_bank:make", "--kind", "transaction"],
            "stress runs synchronous banks",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, args, message):
    assert main(["stress", *args, "--out", str(tmp_path / "runs")]) == 2
    err = capsys.readouterr().err
    assert message in " ".join(err.split())
    assert err.count("contend:") == 1 and "Traceback" not in err
    assert not (tmp_path / "runs").exists()
