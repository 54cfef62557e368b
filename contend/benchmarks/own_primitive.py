"""How reliably and how fast `--kind operations` catches the worked examples' known-bad twins,
and that the correct primitives pass (docs/own-primitive.md).

`python -m contend.benchmarks.own_primitive --runs 20` runs the operations machine `--runs`
times per primitive of tests/fixtures/operations, a fresh seed each run, without shrinking: a
twin up to `--max-examples` examples (caught: how many runs, the median and worst seconds to the
catch), a correct one 200 examples a run, against the re-run and, where the module has one,
its model (a violation is a false alarm). Run it from the repository's root (the fixtures are
its tests').
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from contend.machines.hunt import run_once
from contend.machines.operations import machine_for
from contend.servers.target import open_target
from contend.subject.resolve import user_subject

FIXTURES = "tests.fixtures.operations"
#: (module, known-bad, model): the primitives measured.
CASES = [
    ("stock_get_then_decr", True, None),
    ("idempotency_check_then_set", True, None),
    ("stock_script", False, None),
    ("stock_script", False, f"{FIXTURES}.stock_script:StockModel"),
    ("idempotency_watch", False, None),
    ("idempotency_watch", False, f"{FIXTURES}.idempotency_watch:IdempotencyModel"),
    ("seat_plain", False, None),
]
#: Examples a run of a correct primitive (as `contend check --impl` runs).
CORRECT_EXAMPLES = 200


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m contend.benchmarks.own_primitive", description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="seeds per primitive (default 20)")
    parser.add_argument("--max-examples", type=int, default=1000, help="examples a twin's run may take")
    parser.add_argument("--only", action="append", default=[], help="only this module (repeatable)")
    args = parser.parse_args(argv)
    failed = False
    with open_target() as target:
        for module, known_bad, model in CASES:
            if args.only and module not in args.only:
                continue
            subject = user_subject(f"{FIXTURES}.{module}:make", "operations", target, model=model)
            machine = machine_for(subject)
            examples = args.max_examples if known_bad else CORRECT_EXAMPLES
            times: list[float] = []
            found = 0
            started = time.perf_counter()
            for seed in range(args.runs):
                seconds, violation, _ = run_once(
                    machine, target, seed=seed, max_examples=examples, shrink=False
                )
                times.append(seconds)
                found += violation is not None
                if violation is not None and not known_bad:
                    print(f"  false alarm: {module} seed {seed}: {violation}", flush=True)
            label = f"{module} with {model.rsplit(':', 1)[1]}" if model else module
            what = f"caught {found}/{args.runs}" if known_bad else f"violations {found}/{args.runs}"
            failed |= found != (args.runs if known_bad else 0)
            print(
                f"{label}: {what}, median {statistics.median(times):.2f} s, worst {max(times):.2f} s, "
                f"{time.perf_counter() - started:.0f} s in all",
                flush=True,
            )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
