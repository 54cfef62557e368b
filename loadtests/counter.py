"""A locked read-modify-write counter: seed 002's `ham` (GET, then SET one higher).

Strategies: watch (WATCH/MULTI/EXEC, retried), lock_first (the token lock)
and lock_<name> for every other correct lock of impl/catalog.py, and the
ceiling: incr (INCR) and lua (GET and SET in one script). `--hot-keys N`
spreads the users over N counters. After the run each counter must equal the
increments that succeeded. `--impl package.module:factory --kind lock` puts
your own lock (contend check's lock protocol) around the GET and SET instead:
a lock that lets two clients in shows as lost increments.

    locust -f loadtests/counter.py --headless -u 16 -r 16 -t 10s --strategy lock_first
"""

from contend.load.harness import ContendUser


class CounterUser(ContendUser):
    workload = "counter"
