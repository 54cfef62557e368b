"""The checker benchmark's Porcupine mode: verdicts compared with the ones Porcupine's tests expect."""

from __future__ import annotations

import shutil
from pathlib import Path

from contend.benchmarks.checker import corrupt_each_key, kv_history, main, porcupine
from contend.history.checker import check_history
from contend.history.verdict import Linearizability
from contend.models.kv import KvModel

DATA = Path(__file__).resolve().parents[1] / "data"


def _test_data(root: Path, etcd: dict[str, str], kv: dict[str, str]) -> Path:
    (root / "jepsen").mkdir(parents=True)
    (root / "kv").mkdir()
    for name, source in etcd.items():
        shutil.copy(DATA / source, root / "jepsen" / name)
    for name, source in kv.items():
        shutil.copy(DATA / source, root / "kv" / name)
    return root


def test_porcupine_mode_agrees_and_reports_a_mismatch(tmp_path, capsys):
    good = _test_data(
        tmp_path / "good",
        {"etcd_000.log": "etcd_000.log", "etcd_002.log": "etcd_002.log"},
        {"c01-ok.txt": "kv_ok.edn", "c01-bad.txt": "kv_bad.edn"},
    )
    assert porcupine(good)
    out = capsys.readouterr().out
    assert "4 Porcupine histories, 4 verdicts as its tests expect" in out
    assert "2 etcd histories in one process" in out
    # etcd_002 is expected linearizable: give it etcd_000's history and the mismatch is named.
    bad = _test_data(tmp_path / "bad", {"etcd_002.log": "etcd_000.log"}, {})
    assert main(["--porcupine", str(bad)]) == 1
    out = capsys.readouterr().out
    assert "MISMATCH etcd_002.log: not linearizable, Porcupine's tests expect linearizable" in out
    assert main(["--porcupine", str(tmp_path / "nothing")]) == 1
    assert "give Porcupine's test_data directory" in capsys.readouterr().out


def test_every_key_bad_makes_every_partition_not_linearizable():
    history = corrupt_each_key(kv_history(operations=400, processes=10, keys=4))
    verdict = check_history(history, KvModel(), timeout=30, all_partitions=True)
    assert verdict.outcome is Linearizability.NOT_LINEARIZABLE
    assert len(verdict.partitions) == verdict.checked == 4


def test_the_porcupine_run_compares_only_the_histories_its_tests_give_a_verdict(tmp_path, capsys):
    """etcd_095.log is empty and porcupine_test.go expects nothing of it: not a MISMATCH."""
    jepsen = tmp_path / "jepsen"
    jepsen.mkdir()
    shutil.copy(DATA / "etcd_002.log", jepsen / "etcd_002.log")
    (jepsen / "etcd_095.log").write_text("")
    assert porcupine(tmp_path)
    out = capsys.readouterr().out
    assert "not compared: etcd_095.log" in out and "MISMATCH" not in out
    assert "1 Porcupine histories, 1 verdicts as its tests expect" in out
