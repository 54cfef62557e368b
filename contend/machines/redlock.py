"""Redlock over five independent masters, and the fault its safety argument rules out.

Five embedded masters are started here, each a real redis-server without persistence. The
lock machine drives `impl.locks.redlock` on them with its usual rules (acquire, release,
extend, crashes, stalls, clock jumps), plus two faults: `cut_off`, a network partition that
cuts one client off from a minority of the masters, and `restart_master`, which kills one
master with SIGKILL and starts it again on the same port, empty, while some client holds the
lock.

Redlock's published argument needs a restarted master to keep its keys (fsync always) or to
stay down longer than a TTL. Without that, a client can win a majority while another still
holds a valid lease: Martin Kleppmann's counterexample ("How to do distributed locking").
Hypothesis finds it here on its own, choosing when to restart which master, and shrinks it.

`python -m contend.machines.redlock --runs 20` prints how often and how fast it is found, the
shrunk counterexample and its size; without the restart rule (`--no-restarts`) the same lock
passes the same search.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.impl.catalog import CLOCK_SKEW_SAFE, CRASH_LIVENESS, MUTUAL_EXCLUSION, SAFE_RELEASE
from contend.impl.locks.redlock import factory_over
from contend.machines.hunt import run_once
from contend.machines.locks import LockMachine
from contend.target.server import EmbeddedRedis
from contend.target.target import Target

MASTERS = 5
#: The masters a partition cuts a client off from: a minority.
MINORITY = (MASTERS - 1) // 2
CLAIMS = frozenset({MUTUAL_EXCLUSION, SAFE_RELEASE, CRASH_LIVENESS, CLOCK_SKEW_SAFE})


@contextlib.contextmanager
def five_masters(masters: int = MASTERS) -> Iterator[tuple[Target, list[EmbeddedRedis]]]:
    """`masters` embedded servers without persistence; the target is the first, the rest its `also`."""
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(EmbeddedRedis()) for _ in range(masters)]
        first = servers[0]
        yield (
            Target(
                first.url,
                f"{masters} embedded masters ({first.binary.product} {first.binary.version}, no persistence)",
                first,
                also=tuple(s.url for s in servers[1:]),
            ),
            servers,
        )


#: The Redlock implementations the demo can drive: contend's own, and pottery's (pip install -e '.[libs]').
LIBRARIES = ("contend", "pottery")


def _factory(lib: str, others: tuple[str, ...]) -> Any:
    if lib == "pottery":
        from contend.adapters.pottery import over_masters

        return over_masters(others)
    return factory_over(others)


def machine_for(
    target: Target, servers: list[EmbeddedRedis], *, restarts: bool = True, lib: str = "contend"
) -> type[LockMachine]:
    """The lock machine for Redlock (`lib`'s) over `servers`, with the restart rule when `restarts`."""
    body: dict[str, Any] = {
        "factory": staticmethod(_factory(lib, target.also)),
        "claims": CLAIMS,
        "servers": servers,
    }
    if restarts:
        body["restart_master"] = restart_master
    body["cut_off"] = cut_off
    return type("RedlockMachine", (LockMachine,), body)


@precondition(lambda self: not any(c.unreachable for c in self.scheduler.clients))
@rule(client=st.integers(0, 3), first=st.integers(0, MASTERS - 1))
def cut_off(self: Any, client: int, first: int) -> None:
    """A network partition: one client can no longer reach a minority of the masters (two of five,
    from master `first` on), for the rest of the example."""
    index = client % self.workers
    ports = [self.servers[(first + k) % len(self.servers)].port for k in range(MINORITY)]
    self.scheduler.clients[index].unreachable = {f"127.0.0.1:{port}" for port in ports}
    names = ", ".join(f"master {(first + k) % len(self.servers) + 1}" for k in range(MINORITY))
    self.scheduler.note(f"{self.scheduler.clients[index].name} is cut off from {names}")


@precondition(lambda self: bool(self.believers) and not _restarted(self))
@rule(which=st.integers(0, MASTERS - 1))
def restart_master(self: Any, which: int) -> None:
    """While a client holds the lock, one master is killed (SIGKILL) and started again on the same
    port without persistence: it comes back empty. Once per example: one is enough."""
    server = self.servers[which % len(self.servers)]
    server.kill()
    server.start()
    self.scheduler.note(
        f"master {which % len(self.servers) + 1} (:{server.port}) restarted empty (no persistence)"
    )


def _restarted(machine: Any) -> bool:
    return any("restarted empty" in step.note for step in machine.scheduler.trace)


@dataclass
class Demo:
    """How the search went: per seed, seconds to the first violation (None: not found)."""

    times: list[float | None] = field(default_factory=list)
    shrunk: str = ""
    violation: str = ""
    clients: int = 0
    round_trips: int = 0
    restarts: int = 0

    @property
    def found(self) -> list[float]:
        return [t for t in self.times if t is not None]


def demo(runs: int, max_examples: int, *, restarts: bool = True, lib: str = "contend") -> Demo:
    """Search `runs` seeds for a violation, then shrink the first seed's one."""
    result = Demo()
    with five_masters() as (target, servers):
        machine = machine_for(target, servers, restarts=restarts, lib=lib)
        for seed in range(runs):
            seconds, violation, _ = run_once(machine, target, seed, max_examples, shrink=False)
            result.times.append(seconds if violation is not None else None)
        if not result.found:
            return result
        seed = next(k for k, t in enumerate(result.times) if t is not None)
        _, violation, failed = run_once(machine, target, seed, max_examples, shrink=True)
        if violation is not None and isinstance(failed, LockMachine):
            trace = failed.scheduler.trace
            result.violation = str(violation)
            result.shrunk = failed.scheduler.format_trace()
            probe = failed.scheduler.clients[failed.probe].name  # the harness's, not a worker
            result.clients = len({s.client for s in trace if s.sent and s.client != probe})
            result.round_trips = sum(1 for s in trace if s.sent)
            result.restarts = sum(1 for s in trace if "restarted empty" in s.note)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m contend.machines.redlock", description=__doc__)
    parser.add_argument("--runs", type=int, default=20, help="seeds to search (default 20)")
    parser.add_argument("--max-examples", type=int, default=500, help="examples per seed (default 500)")
    parser.add_argument("--no-restarts", action="store_true", help="the same search without the restart rule")
    parser.add_argument(
        "--lib", choices=LIBRARIES, default="contend", help="whose Redlock: contend's (default) or pottery's"
    )
    args = parser.parse_args(argv)
    if args.lib == "pottery":
        try:
            import pottery  # noqa: F401
        except ImportError:
            parser.error("--lib pottery needs pottery: pip install -e '.[libs]'")
    result = demo(args.runs, args.max_examples, restarts=not args.no_restarts, lib=args.lib)
    found = result.found
    rule = "without restarts" if args.no_restarts else "with masters restarted empty"
    print(
        f"{args.lib}'s Redlock over {MASTERS} masters, {rule}: violated in {len(found)}/{args.runs} seeds",
        end="",
    )
    if found:
        print(f", median {statistics.median(found):.2f} s, worst {max(found):.2f} s")
        print(
            f"shrunk: {result.clients} clients, {result.round_trips} round trips, "
            f"{result.restarts} restart(s)\n{result.violation}\n{result.shrunk}"
        )
    else:
        print(f" ({args.max_examples} examples each)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
