"""Rate-limited hits: every user hits one of `--hot-keys` keys, each allowing 100 hits a second.

Strategies: every correct rate limiter of impl/catalog.py (fixed_window, sliding_log, gcra).
Every decision, admitted or refused, is one operation: the run's rate is decisions per second.
After the run no key may have admitted more than its limit allows over the run, and the check's
line gives what each admitted against the limit a window. `--impl package.module:factory --kind
rate-limiter` runs your own limiter (contend check's rate-limiter protocol) instead.

    locust -f loadtests/limiter.py --headless -u 16 -r 16 -t 10s --strategy gcra
"""

from contend.load.harness import ContendUser


class LimiterUser(ContendUser):
    workload = "limiter"
