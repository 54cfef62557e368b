"""Code that is correct on one server and wrong on a Redis Cluster is reported as cluster-slots,
and as nothing else (not the refused acquires and hangs it causes), naming the command and each
key with its slot and node; its single-server twin passes. On a cluster the same example puts
the same keys on the same slots and nodes every time, so its replay replays."""

from __future__ import annotations

import re
import shlex

import pytest

from contend.cli import main
from contend.servers.target import open_target

#: Each mutant (tests/fixtures/cluster/), the command refused, and the key it named besides the
#: one contend gave it.
MUTANTS = {
    "grant_count_lock": ("EVAL", ":grants (slot "),  # a script's undeclared key: the server refuses it
    "holders_lock": ("MULTI/EXEC", ":holders (slot "),  # a transaction over two slots: redis-py does
    "frozen_lock": ("MGET", ":frozen (slot "),  # a multi-key command over two slots: redis-py does
}
FEW = ("--check", "model", "--check", "schedule", "--no-shrink")


@pytest.fixture(scope="module")
def cluster_target():
    with open_target(cluster=3) as target:
        yield target


def check(capsys, *args: str) -> tuple[int, str]:
    code = main(["check", *args])
    return code, capsys.readouterr().out


def spec(name: str) -> tuple[str, ...]:
    return ("--impl", f"tests.fixtures.cluster.{name}:make", "--kind", "lock")


@pytest.mark.parametrize("name", list(MUTANTS))
def test_a_cluster_mistake_is_cluster_slots_and_only_that_with_its_keys_named(
    capsys, cluster_target, contend_target, name
):
    command, other = MUTANTS[name]
    code, out = check(capsys, "--redis-url", cluster_target.url, *spec(name), *FEW)
    assert code == 1, out
    evidence = out.split("\nevidence\n", 1)[1]
    lines = [line for line in evidence.splitlines() if " · hygiene: " in line]
    assert len(lines) == 1, "one line for the one refusal, whichever checks met it"
    # The schedule check puts the example's keys on each master in turn, so it meets the refusal;
    # the model check meets it when the run's random namespace puts the other key on another
    # node (7 runs of 12), and is then named too.
    assert re.search(r" · (model, )?schedule · hygiene: cluster-slots", lines[0]), lines[0]
    assert f"{command} spans hash slots on a Redis Cluster" in lines[0] and other in lines[0]
    assert re.search(r"\{contend:[^ ]*:lock\} \(slot \d+ on 127\.0\.0\.1:\d+\)", lines[0]), "the key given"
    assert "FAIL (hygiene)" in out, "no symptom reported besides the cause"
    assert " · liveness: " not in evidence and " · safety: " not in evidence
    code, out = check(
        capsys, "--redis-url", contend_target.url, *spec(name), *FEW, "--schedule-examples", "20"
    )
    assert code == 0, f"the same code on one server passes: {out}"


def test_the_same_example_puts_the_same_keys_on_the_same_nodes_and_its_replay_replays(capsys, cluster_target):
    where = ("--redis-url", cluster_target.url, "--namespace", "contend:test-placement")
    runs = [
        check(capsys, *where, *spec("grant_count_lock"), "--check", "schedule", "--no-shrink")
        for _ in range(2)
    ]
    assert [code for code, _ in runs] == [1, 1]
    assert trace(runs[0][1]) == trace(runs[1][1]), "the same keys, slots and nodes, step for step"
    replay = re.search(r"replay: (contend check .*)", runs[0][1]).group(1)
    assert "--namespace contend:test-placement" in replay and f"--redis-url {cluster_target.url}" in replay
    code, again = check(capsys, *shlex.split(replay)[2:])
    assert code == 1 and trace(again) == trace(runs[0][1]), "the replay meets the same refusal"


def trace(text: str) -> list[str]:
    """The evidence's trace and refusal, holders' random tokens left out."""
    kept = [
        line.strip()
        for line in text.splitlines()
        if re.match(r"\s+#\d+ ", line) or "spans hash slots" in line
    ]
    return [re.sub(r"\b[0-9a-f]{32}\b", "<token>", line) for line in kept]
