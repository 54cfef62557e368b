"""Producers and consumers on a work queue: put a job, take the next one, ack it.

Strategies: list (the catalog's list_queue: BLMOVE into a processing list, a
lease per job, a reaper that checks it) and stream (stream_queue: XREADGROUP,
XACK, XAUTOCLAIM after 1.1 leases). Every user produces and consumes; one take
in 50 ends with the consumer's death, so its job must come back after the
0.5 s lease. `--hot-keys N` spreads the jobs over N queues. After the run a
fresh consumer drains every queue: nothing may be lost, nothing completed
twice. `--impl package.module:factory --kind queue` runs your own queue.

    locust -f loadtests/jobs.py --headless -u 8 -r 8 -t 10s --strategy stream
"""

from contend.load.harness import ContendUser


class QueueUser(ContendUser):
    workload = "jobs"
