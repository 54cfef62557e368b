"""Every shell command README.md and docs/ show runs: this test runs each one as written, or in a
quick variant where the run is long (fewer seeds, a shorter run, one family), or names the
reason it is not run here (a placeholder for the reader's own code or host, a server in the
foreground until Ctrl-C, the test suite itself, a measurement that takes tens of minutes).

Each runs in the soak tier (`pytest -m soak`: about 25 minutes of CPU, too long for the default
run) through the shell, from a scratch folder that links the checkout's
.venv, tests/, loadtests/ and stateful_tests/ (so the files a command writes land there), and
must exit with the code its page gives, with no traceback. `test_every_shown_command_is_listed`
fails when a page shows a command this table does not list, and prints the count run.
(That every `contend` command parses as written: tests/test_docs.py.)
"""

from __future__ import annotations

import os
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.test_docs import MANUAL, fenced_blocks

ROOT = Path(__file__).resolve().parent.parent
LINKED = (".venv", "tests", "loadtests", "stateful_tests")


@dataclass(frozen=True)
class Run:
    """How a shown command is run: as written (`variant` None) or as `variant`, after `before`,
    exiting with one of `codes`; `needs` a module that an optional extra installs."""

    variant: str | None = None
    codes: tuple[int, ...] = (0,)
    before: str = ""
    needs: str = ""
    timeout: float = 600


def shown_commands() -> list[tuple[str, str]]:
    """(page, command) for each shell command in an sh block of the manual, its comment cut off."""
    found = []
    for path in MANUAL:
        for lang, text in fenced_blocks(path):
            if lang != "sh":
                continue
            for line in text.replace("\\\n", " ").splitlines():
                command = re.sub(r"\s+#\s.*$", "", line).strip()
                if command and not command.startswith("#"):
                    found.append((str(path.relative_to(ROOT)), re.sub(r"\s+", " ", command)))
    return found


C = ".venv/bin/contend"
VENV_INSTALL = (
    "the README's set-up command: .ci/run runs it as written (tests/test_readme.py holds them equal)"
)
SUITE = "the test suite itself: CI runs it (.ci/run), and a test cannot run the suite it is part of"
MEASURE = "a measurement of figures.md, tens of minutes long; its quick form runs for its own page"
PLACEHOLDER = "a placeholder for the reader's own {what}"
FOREGROUND = "a server in the foreground until Ctrl-C: tests/commands/test_server.py starts and stops it"

#: Commands run, as written or in a quick variant.
RUN: dict[str, Run] = {
    # README.md
    f"{C} check --only setnx_getset": Run(),
    f"{C} stress --impl mypackage.locks:make_lock --kind lock --processes 3 --duration 2 --ttl-ms 300 "
    "--nemesis client-pause": Run(
        f"{C} stress --impl contend.impl.locks.token:factory --kind lock --processes 3 --duration 2 "
        "--ttl-ms 300 --nemesis client-pause",
        codes=(1,),
    ),
    # docs/beyond-one-server.md
    f"{C} check --cluster 3 --family lock": Run(f"{C} check --cluster 3 --only token --only fenced"),
    f"{C} check --cluster 3 --impl tests.fixtures.foreign.held_set_lock:make --kind lock --check burst": Run(
        codes=(1,)
    ),
    f"{C} check --cluster 3 --impl tests.fixtures.cluster.grant_count_lock:make --kind lock": Run(codes=(1,)),
    f"{C} check --cluster 3 --impl tests.fixtures.cluster.holders_lock:make --kind lock": Run(codes=(1,)),
    f"{C} check --cluster 3 --impl tests.fixtures.cluster.frozen_lock:make --kind lock": Run(codes=(1,)),
    f"SIDE_LOCK_URL=redis://127.0.0.1:9 {C} check --impl tests.fixtures.side_server_lock:make --kind lock": Run(
        codes=(2,)  # stopped, naming the server outside the run, as the page says
    ),
    f"{C} stress --only fenced --cluster 3 --duration 8 --nemesis reshard,cluster-failover --interval 0.5": Run(),
    f"{C} stress --only token --duration 8 --nemesis sentinel-failover --interval 0.5": Run(codes=(0, 1)),
    f"{C} stress --only redlock --processes 4 --duration 10 --nemesis master-restart --interval 0.3 "
    "--hold-ms 500 --ttl-ms 3000": Run(codes=(1,)),
    f"{C} stress --only redlock --duration 6 --nemesis master-pause,partition --interval 0.3 --hold-ms 50": Run(),
    f"{C} check --masters 5 --impl tests.fixtures.masters.vote_lock:make --kind lock": Run(),
    f"{C} check --masters 3 --impl tests.fixtures.masters.half_quorum_lock:make --kind lock": Run(codes=(1,)),
    f"{C} check --masters 5": Run(),
    f"{C} stress --masters 3 --impl tests.fixtures.masters.vote_lock:make --kind lock --duration 5 "
    "--nemesis master-pause,partition": Run(),
    f"{C} redlock --runs 5": Run(f"{C} redlock --runs 1 --max-examples 30"),
    f"{C} redlock --runs 5 --no-restarts": Run(f"{C} redlock --runs 1 --max-examples 30 --no-restarts"),
    f"{C} redlock --runs 5 --lib pottery": Run(  # a flaky seed on pottery is inconclusive, as the page says
        f"{C} redlock --runs 1 --max-examples 30 --lib pottery", codes=(0, 3), needs="pottery"
    ),
    f"{C} redlock --runs 5 --fence none": Run(f"{C} redlock --runs 1 --max-examples 30 --fence none"),
    f"{C} redlock --runs 5 --fenced": Run(f"{C} redlock --runs 1 --max-examples 30 --fenced"),
    f"{C} sentinel --failovers 3": Run(f"{C} sentinel --failovers 1"),
    # docs/ci.md
    f"{C} check --family registry --junit-xml contend-check.xml --json contend-check.json -q": Run(),
    # docs/commands/bench.md
    f"{C} bench registry": Run(f"{C} bench registry --duration 0.3"),
    f"{C} bench lock": Run(f"{C} bench lock --duration 0.3"),
    f"{C} bench gate": Run(f"{C} bench gate --duration 0.3"),
    # docs/commands/check.md
    f"{C} check": Run(f"{C} check --family single-flight --family semaphore"),
    f"{C} check --family lock": Run(f"{C} check --only token --only setnx_del"),
    f"{C} check --only setnx_getset --no-shrink": Run(),
    f"{C} check --impl tests.fixtures.foreign.raising_lock:make --kind lock": Run(),
    # figures.md: the wall-clock deadline mutant, caught for progress (exit 1).
    f"{C} check --impl tests.fixtures.foreign.wall_deadline_lock:make --kind lock --seed 1": Run(codes=(1,)),
    # docs/commands/history.md
    f"{C} history check tests/data/etcd_002.log --model cas-register --html timeline.html": Run(),
    f"{C} history check tests/data/etcd_000.log tests/data/etcd_002.log --model cas-register": Run(
        codes=(1,)
    ),
    ".venv/bin/python -m contend.benchmarks.checker": Run(
        ".venv/bin/python -m contend.benchmarks.checker --quick"
    ),
    # docs/commands/hunt.md
    f"{C} hunt --runs 20": Run(f"{C} hunt --runs 2 --only naive --only setnx_getset"),
    f"{C} hunt --only async_early_clear --only async_check_then_set": Run(
        f"{C} hunt --only async_early_clear --only async_check_then_set --runs 2"
    ),
    f"{C} hunt --only exists_then_set --runs 5 --budget 120 --json hunt.json": Run(
        f"{C} hunt --only exists_then_set --runs 2 --budget 120 --json hunt.json"
    ),
    # docs/commands/load.md
    f"{C} load": Run(f"{C} load --users 1 --hot-keys 1 --duration 1 --strategy lua"),
    f"{C} load --full": Run(f"{C} load --full --workload counter --users 1 --hot-keys 1 --duration 1"),
    f"{C} load --impl tests.fixtures.foreign.redispy_lock:make --kind lock --users 2 --hot-keys 1 --duration 1": Run(),
    f"{C} load --impl tests.fixtures.user_registry:make --kind registry --users 2 --hot-keys 1 --duration 1": Run(),
    ".venv/bin/locust -f loadtests/ --headless --processes 2 -u 16 -r 16 -t 30s": Run(
        ".venv/bin/locust -f loadtests/ --headless --processes 2 -u 4 -r 4 -t 3s"
    ),
    f"{C} load --users 16 --hot-keys 1 --processes 1,2,4": Run(
        f"{C} load --users 4 --hot-keys 1 --processes 1,2 --duration 1 --strategy lua"
    ),
    # docs/commands/redlock.md
    f"{C} redlock --runs 20": Run(f"{C} redlock --runs 1 --max-examples 30"),
    f"{C} redlock --runs 10 --max-examples 1000 --fenced": Run(
        f"{C} redlock --runs 1 --max-examples 30 --fenced"
    ),
    # docs/commands/report.md
    f"{C} load --workload registry --users 1,4 --hot-keys 1 --duration 1 --out runs/load-small --no-report": Run(),
    f"{C} report runs/load-small": Run(
        before=f"{C} load --workload registry --users 1 --hot-keys 1 --duration 1 --out runs/load-small --no-report"
    ),
    f"{C} report runs/load-small --out runs/load-small-report": Run(
        before=f"{C} load --workload registry --users 1 --hot-keys 1 --duration 1 --out runs/load-small --no-report"
    ),
    # docs/commands/scoreboard.md
    f"{C} scoreboard --lib sherlock-no-expiry --no-write": Run(),
    # docs/commands/sentinel.md
    f"{C} sentinel --failovers 5 --budget 120 --json failovers.json": Run(
        f"{C} sentinel --failovers 1 --budget 120 --json failovers.json"
    ),
    # docs/commands/server.md
    f"{C} server --info": Run(),
    # docs/commands/stress.md
    f"{C} stress --only token --processes 3 --duration 2 --ttl-ms 300 --nemesis client-pause": Run(
        codes=(1,)
    ),
    f"{C} stress --only fenced --processes 3 --duration 2 --ttl-ms 300 --nemesis client-pause": Run(),
    f"{C} stress --impl tests.fixtures.foreign.return_fenced_lock:make --kind lock --processes 3 --duration 2 "
    "--ttl-ms 300 --nemesis client-pause": Run(),
    f"{C} stress --impl tests.fixtures.user_registry:make_racy --kind registry --duration 1": Run(codes=(1,)),
    # docs/figures.md (the quick forms of measurements shown elsewhere are run for those pages)
    f"{C} hunt --runs 20 --no-shrink --only NAME": Run(f"{C} hunt --runs 2 --no-shrink --only naive"),
    f"{C} hunt --runs 20 --no-shrink": Run(f"{C} hunt --runs 1 --no-shrink --only seed_transaction"),
    f"{C} check --impl tests.fixtures.cluster.grant_count_lock:make --kind lock": Run(),
    f"{C} scoreboard --quick --no-write": Run(f"{C} scoreboard --quick --no-write --lib sherlock-no-expiry"),
    # docs/getting-started.md
    f"{C} check --family registry": Run(),
    # docs/protocol.md
    f"{C} check --impl tests.fixtures.foreign.lua_registry:make --kind registry": Run(),
    f"{C} check --impl tests.fixtures.foreign.lua_queue:make --kind queue --claim fifo": Run(),
    f"{C} check --impl tests.fixtures.async_foreign.lua_queue:make --kind queue --claim fifo": Run(),
    f"{C} check --impl tests.fixtures.async_foreign.redispy_lock:make --kind lock": Run(),
    f"{C} check --impl tests.fixtures.async_foreign.redispy_lock_3847:make --kind lock --check cancel": Run(
        codes=(1,)
    ),
    # docs/queues.md
    f"{C} check --family queue": Run(),
    f"{C} hunt --only short_claim_queue": Run(f"{C} hunt --only short_claim_queue --runs 2"),
    # docs/transactions.md
    f"{C} check --family transaction": Run(),
    f"{C} check --impl tests.fixtures.foreign.hash_bank:make --kind transaction": Run(),
    f"{C} hunt --only transfer_no_watch --only transfer_watch_some --only audit_separate_reads": Run(
        f"{C} hunt --only transfer_no_watch --only transfer_watch_some --only audit_separate_reads --runs 2"
    ),
    f"{C} load --workload transfer --strategy watch --strategy lock_first --strategy lua --users 1,4,16,64 "
    "--hot-keys 1,10 --duration 2": Run(
        f"{C} load --workload transfer --strategy watch --strategy lock_first --strategy lua --users 1,4 "
        "--hot-keys 1 --duration 1"
    ),
    # The queues, rate limiters, banks under stress and your own primitive (docs/queues.md,
    # rate-limiters.md, own-primitive.md, commands/load.md, commands/stress.md, transactions.md)
    f"{C} load --workload jobs --users 1,4,16 --hot-keys 1 --duration 2": Run(
        f"{C} load --workload jobs --users 1 --hot-keys 1 --duration 1"
    ),
    ".venv/bin/locust -f loadtests/jobs.py --headless -u 8 -r 8 -t 10s --strategy stream": Run(
        ".venv/bin/locust -f loadtests/jobs.py --headless -u 2 -r 2 -t 2s --strategy stream"
    ),
    "CONTEND_LOAD_KNOWN_BAD=1 .venv/bin/locust -f loadtests/jobs.py --headless -u 4 -r 4 -t 2s --strategy brpop": Run(
        codes=(1,)
    ),
    f"{C} load --impl tests.fixtures.foreign.list_log:make --kind rate-limiter --users 2 --hot-keys 1 --duration 1": Run(),
    f"{C} load --impl tests.fixtures.foreign.lua_queue:make --kind queue --users 2 --hot-keys 1 --duration 1": Run(),
    f"{C} load --workload limiter --users 4,16 --hot-keys 1 --duration 5": Run(
        f"{C} load --workload limiter --users 4 --hot-keys 1 --duration 1"
    ),
    f"{C} stress --only transfer_no_watch --processes 4 --duration 2": Run(codes=(1,)),
    f"{C} stress --only transfer_no_watch --processes 4 --duration 3": Run(codes=(1,)),
    f"{C} stress --only bank_watch --processes 4 --duration 3 --nemesis server-kill --persistence aof": Run(),
    f"{C} stress --only bank_audit_multi --processes 4 --duration 3 --nemesis server-kill --persistence aof": Run(),
    f"{C} stress --impl tests.fixtures.foreign.hash_bank:make --kind transaction --duration 2": Run(),
    f"{C} hunt --only incr_then_expire --only get_then_incr --only separate_count_log --only unwatched_bucket "
    "--only client_clock_window --runs 20": Run(
        f"{C} hunt --only incr_then_expire --only get_then_incr --only separate_count_log --only unwatched_bucket "
        "--only client_clock_window --runs 1"
    ),
    f"{C} hunt --only get_then_incr --runs 20": Run(f"{C} hunt --only get_then_incr --runs 1"),
    f"{C} hunt --only peek_take_queue --runs 20": Run(f"{C} hunt --only peek_take_queue --runs 1"),
    ".venv/bin/python -m contend.benchmarks.own_primitive --runs 20": Run(
        ".venv/bin/python -m contend.benchmarks.own_primitive --runs 1"
    ),
    f"{C} check --impl tests.fixtures.operations.stock_script:make --kind operations": Run(),
    f"{C} check --impl tests.fixtures.operations.stock_get_then_decr:make --kind operations": Run(codes=(1,)),
    f"{C} check --impl tests.fixtures.operations.idempotency_watch:make --kind operations": Run(),
    f"{C} check --impl tests.fixtures.operations.idempotency_check_then_set:make --kind operations": Run(
        codes=(1,)
    ),
    f"{C} check --impl tests.fixtures.operations.stock_async_watch:make --kind operations": Run(),
    f"{C} check --impl tests.fixtures.operations.stock_async_decr_then_refund:make --kind operations": Run(
        codes=(1,)
    ),
    f"{C} check --cluster 3 --impl tests.fixtures.operations.idempotency_async_script:make --kind operations": Run(),
    f"{C} check --cluster 3 --impl tests.fixtures.operations.idempotency_watch:make --kind operations": Run(
        codes=(1,)
    ),
    f"{C} check --impl tests.fixtures.operations.stock_script:make --kind operations --model "
    "tests.fixtures.operations.stock_script:StockModel": Run(),
    f"{C} check --impl tests.fixtures.foreign.list_log:make --kind rate-limiter --claim sliding-log": Run(),
    f"{C} check --family rate-limiter": Run(),
    f"{C} check --impl tests.fixtures.async_foreign.counter_window:make --kind rate-limiter": Run(),
    # 3: pyrate-limiter's finding is met by its burst, which real-time thread timing decides
    f"{C} scoreboard --lib pyrate-limiter --lib limits-moving-window --no-write": Run(codes=(0, 3)),
    f"{C} check --impl tests.fixtures.foreign.watch_bucket:make --kind rate-limiter --claim token-bucket "
    "--no-claim fixed-window": Run(),
}

#: Commands not run here, and why.
NOT_RUN: dict[str, str] = {
    f"{C} load --workload jobs --users 1,2,4,8,16 --hot-keys 1": MEASURE,
    f"{C} load --workload jobs --users 1,2,4,8,16 --hot-keys 1 --duration 3": MEASURE,
    "python3 -m venv .venv && .venv/bin/pip install -e . && .venv/bin/contend check": VENV_INSTALL,
    "python3 -m venv .venv && .venv/bin/pip install -e '.[dev]' && .venv/bin/pytest": VENV_INSTALL,
    f"{C} check --impl mypackage.locks:make_lock --kind lock": PLACEHOLDER.format(what="module")
    + "; the same command on a fixture is getting-started.md's raising_lock",
    f"{C} check --impl mypackage.locks:make_lock --kind lock --no-claim clock-skew-safe": PLACEHOLDER.format(
        what="module"
    ),
    "contend history check run.jsonl --model mutex": PLACEHOLDER.format(what="history file"),
    "contend history check logs/*.jsonl --model kv --search-seconds 30": PLACEHOLDER.format(
        what="history files"
    ),
    ".venv/bin/python -m contend.benchmarks.checker --porcupine path/to/porcupine/test_data": PLACEHOLDER.format(
        what="checkout of Porcupine"
    ),
    ".venv/bin/pytest": SUITE,
    '.venv/bin/pytest -m "not slow"': SUITE,
    ".venv/bin/pytest -m soak": SUITE + " (the soak tier, hours)",
    ".venv/bin/pytest stateful_tests --hypothesis-profile contend-thorough": SUITE + " (its gate, thorough)",
    '.venv/bin/pytest stateful_tests/test_gate.py -m "" -k "bank_" -n 0 --hypothesis-profile contend-thorough': MEASURE,
    f"{C} server --cluster 3 --replicas 1": FOREGROUND,
    f"{C} server": FOREGROUND,
    f"{C} check --redis-url redis://:password@host:6379/0": PLACEHOLDER.format(what="server"),
    ".venv/bin/locust -f loadtests/": "Locust's web UI, until Ctrl-C; the headless form is run",
    ".venv/bin/locust -f loadtests/counter.py,loadtests/transfer.py --impl tests.fixtures.foreign.redispy_lock:make "
    "--kind lock": "Locust's web UI, until Ctrl-C; tests/load/test_harness.py runs --impl headless",
    ".venv/bin/locust -f loadtests/ --headless --master --expect-workers 2 --redis-url redis://HOST:6379/0 -u 50 "
    "-r 50 -t 30s": PLACEHOLDER.format(what="hosts (a master and workers on several machines)"),
    ".venv/bin/locust -f loadtests/ --worker --master-host MASTERHOST": PLACEHOLDER.format(what="hosts"),
    f"{C} scoreboard --quick --out my-scoreboard": "installs the board's libraries, each in an environment of "
    "its own (minutes); one library's row is run",
    "( while :; do :; done ) &": MEASURE + " (the CPU-bound process beside the boards)",
    f"{C} scoreboard --out /tmp/full1 -q --json /tmp/full1.json": MEASURE,
    f"{C} scoreboard --quick --out /tmp/quick1 -q --json /tmp/quick1.json": MEASURE,
    "kill %1": MEASURE + " (its CPU-bound process ends)",
    ".venv/bin/python -m contend.benchmarks.faults --every-correct --runs 20 --max-examples 50 --hogs 2": MEASURE,
    ".venv/bin/python -m contend.benchmarks.faults --every-correct --runs 20 --max-examples 50 --hogs 1": MEASURE,
    ".venv/bin/python -m contend.benchmarks.impl_times --runs 5 --contend ../before/.venv/bin/contend --contend "
    ".venv/bin/contend": PLACEHOLDER.format(what="second checkout (../before) to compare with"),
    ".venv/bin/python -m contend.benchmarks.impl_times --runs 3 --contend ../before39/.venv/bin/contend --contend "
    ".venv/bin/contend": PLACEHOLDER.format(what="second checkout (../before39) to compare with"),
    ".venv/bin/python -m contend.benchmarks.impl_times --runs 2 --contend ../before/.venv/bin/contend --contend "
    ".venv/bin/contend --only foreign.raising_lock --only foreign.returning_lock --only foreign.threadlocal_lock "
    "--only foreign.redispy_lock --only foreign.attr_fenced_lock --only foreign.return_fenced_lock --only "
    "foreign.held_set_lock --only foreign.zset_semaphore --only foreign.time_slot_semaphore --only "
    "masters.fanout_redlock --only masters.vote_lock": PLACEHOLDER.format(
        what="second checkout (../before) to compare with"
    ),
    f"{C} hunt --only transfer_no_watch --only transfer_watch_some --only audit_separate_reads --runs 20": MEASURE,
    f"{C} redlock --runs 10 --max-examples 1000": MEASURE,
    ".venv/bin/python -m contend.benchmarks.faults --runs 20": MEASURE,
    ".venv/bin/python -m contend.benchmarks.impl_times --mutants --runs 20": MEASURE,
    ".venv/bin/python -m contend.benchmarks.impl_times --mutants --runs 20 --only foreign.retry_incr_registry "
    "--only foreign.hopeful_lock --only foreign.patient_lock --only foreign.lease_sleeper_lock --only "
    "foreign.del_fallback_lock --only foreign.reclaim_extend_lock --only masters.half_quorum_lock --only "
    "masters.blind_release_redlock --only masters.any_extend_redlock": MEASURE,
    ".venv/bin/python -m contend.benchmarks.impl_times --mutants --runs 5 --only foreign.touch_lock --only "
    "foreign.fence_after_lock --only foreign.early_release_flight --only foreign.self_serving_flight --only "
    "foreign.wall_deadline_lock --only foreign.double_free_semaphore --only foreign.rerun_flight --only "
    "foreign.retry_log --only foreign.transaction_bucket --only foreign.client_clock_log --only "
    "masters.ageless_redlock": MEASURE,
    ".venv/bin/python -m contend.benchmarks.faults --runs 20 --only foreign.transaction_bucket --only "
    "foreign.retry_log": MEASURE,
    ".venv/bin/python -m contend.benchmarks.faults --runs 20 --correct": MEASURE,
    f"{C} check --cluster 3": MEASURE + " (the whole battery on a cluster)",
    f"{C} load --users 16 --hot-keys 1 --processes 1,2,4 --duration 10 --ceiling-duration 2": MEASURE,
}


def _distinct() -> list[str]:
    return list(dict.fromkeys(command for _, command in shown_commands()))


def test_every_shown_command_is_listed(capsys):
    """A command a page shows is run here or says why not; nothing listed is no longer shown."""
    shown = _distinct()
    unlisted = [c for c in shown if c not in RUN and c not in NOT_RUN]
    assert not unlisted, "list these in RUN or NOT_RUN of tests/test_doc_commands.py:\n" + "\n".join(unlisted)
    stale = [c for c in [*RUN, *NOT_RUN] if c not in shown]
    assert not stale, "no page shows these any more:\n" + "\n".join(stale)
    assert not set(RUN) & set(NOT_RUN)
    as_written = sum(1 for c in shown if c in RUN and RUN[c].variant is None)
    with capsys.disabled():
        print(
            f"\nthe manual shows {len(shown)} distinct shell commands: {len(RUN)} run by "
            f"tests/test_doc_commands.py ({as_written} as written, {len(RUN) - as_written} in a quick "
            f"variant), {len(NOT_RUN)} not run, each with its reason"
        )


@pytest.fixture
def scratch(tmp_path: Path) -> Path:
    """A folder that looks like the checkout to a command (its .venv, tests/ and loadtests/)."""
    for name in LINKED:
        (tmp_path / name).symlink_to(ROOT / name)
    return tmp_path


@pytest.mark.slow
@pytest.mark.soak  # about 25 minutes of CPU: `pytest -m soak` (the default run lists them, above)
@pytest.mark.parametrize("shown", list(RUN), ids=lambda c: c.removeprefix(f"{C} ")[:80])
def test_a_shown_command_runs(shown: str, scratch: Path):
    run = RUN[shown]
    if run.needs:
        pytest.importorskip(run.needs, reason=f"needs {run.needs} (pip install -e '.[libs]')")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "COV_"))}
    env["PYTHONPATH"] = str(ROOT)
    for command in [run.before, run.variant or shown]:
        if not command:
            continue
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            timeout=run.timeout,
            check=False,
        )
        text = done.stdout + done.stderr
        codes = (0,) if command == run.before else run.codes
        assert done.returncode in codes, f"{command}: exit {done.returncode}\n{text[-3000:]}"
        assert "Traceback" not in text, f"{command}:\n{text[-3000:]}"
