"""A redis-py PING loop with one greenlet per client: the raw ceiling, measured the way Locust's users run.

Locust's users are gevent greenlets in one process, each with its own
connection; so are these clients. Run as a module in its own process (it
monkeypatches the standard library with gevent, like Locust):

    python -m contend.load.pingloop URL CLIENTS SECONDS [lpush-rpop KEY]

prints {"ops": N, "seconds": S} as JSON on stdout. All clients connect and
PING once before the timed window starts. With `lpush-rpop KEY` each loop
step is an LPUSH of one element on KEY and an RPOP of it (two round trips:
one op, the raw ceiling of a work queue's jobs); KEY is deleted afterwards.
"""

from __future__ import annotations

import json
import sys


def main(argv: list[str]) -> int:
    from gevent import monkey

    monkey.patch_all()
    import time

    import gevent
    import redis

    url, clients, seconds = argv[0], int(argv[1]), float(argv[2])
    op, key = (argv[3], argv[4]) if len(argv) > 4 else ("ping", "")
    conns = [redis.Redis.from_url(url, socket_connect_timeout=5) for _ in range(clients)]
    for conn in conns:
        conn.ping()
    counts = [0] * clients
    stop = time.perf_counter() + seconds

    def loop(k: int) -> None:
        conn, n = conns[k], 0
        while time.perf_counter() < stop:
            if op == "lpush-rpop":
                conn.lpush(key, "job")
                conn.rpop(key)
            else:
                conn.ping()
            n += 1
        counts[k] = n

    start = time.perf_counter()
    gevent.joinall([gevent.spawn(loop, k) for k in range(clients)], raise_error=True)
    elapsed = time.perf_counter() - start
    if key:
        conns[0].delete(key)
    for conn in conns:
        conn.close()
    print(json.dumps({"ops": sum(counts), "seconds": elapsed}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
