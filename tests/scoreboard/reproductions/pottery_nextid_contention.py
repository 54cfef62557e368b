"""pottery's NextID: with its one server up, concurrent draws raise QuorumNotAchieved.

Eight threads draw 50 ids each from one sequence on one healthy server; a draw that loses the
race to set the next id three times in a row raises QuorumNotAchieved, though no server failed.
Run: python tests/scoreboard/reproductions/pottery_nextid_contention.py redis://127.0.0.1:6379/0
"""

from __future__ import annotations

import sys
import uuid
from concurrent.futures import ThreadPoolExecutor

import redis
from pottery import NextID, QuorumNotAchieved


def reproduce(url: str, key: str) -> dict[str, object]:
    """How many draws handed out an id, how many of those were distinct, whether any raised."""
    ids: list[int] = []
    raised: list[Exception] = []

    def draws() -> None:
        sequence = NextID(key=key, masters={redis.Redis.from_url(url)})
        for _ in range(50):
            try:
                ids.append(next(sequence))
            except QuorumNotAchieved as exc:
                raised.append(exc)

    with ThreadPoolExecutor(8) as pool:  # 8 clients at once
        list(pool.map(lambda _: draws(), range(8)))
    return {"all_ids_distinct": len(ids) == len(set(ids)), "some_draws_raised": bool(raised)}


if __name__ == "__main__":
    seen = reproduce((sys.argv[1:] or ["redis://127.0.0.1:6379/0"])[0], f"ids-{uuid.uuid4().hex}")
    print(seen)
    sys.exit(0 if seen["some_draws_raised"] else 1)
