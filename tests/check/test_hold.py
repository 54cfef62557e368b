"""The semaphore battery's hold check: a holder keeps its permit for its lease. A semaphore whose
clock reads the server's microseconds as a decimal fraction (Redis-Semaphore's `current_time`)
hands a live holder's permit to another client in the first tenth of a second; correct ones
never do (tests/fixtures/foreign's are tried too, in test_foreign)."""

from __future__ import annotations

import json

import redis

from contend.cli import main


class JoinedClockSemaphore:
    """Permits in a hash, each with its grab time read as `float(".".join(TIME))`; an acquire
    first gives back the permits grabbed longer than the lease ago, by that clock."""

    def __init__(self, client: redis.Redis, key: str, ttl_ms: int, limit: int = 1) -> None:
        if not isinstance(key, str) or not key:
            raise ValueError(f"key must be a non-empty str, got {key!r}")
        if not isinstance(ttl_ms, int) or isinstance(ttl_ms, bool) or ttl_ms <= 0:
            raise ValueError(f"ttl_ms must be a positive int, got {ttl_ms!r}")
        self.client, self.key, self.ttl, self.limit = client, key, ttl_ms / 1000, limit
        self.token: int | None = None

    def now(self) -> float:
        return float(".".join(map(str, self.client.time())))

    def acquire(self, blocking: bool = True, timeout: float | None = None) -> bool:
        now = self.now()
        for token, at in self.client.hgetall(self.key).items():
            if float(at) + self.ttl < now:
                self.client.hdel(self.key, token)
        for token in range(self.limit):
            if self.client.hsetnx(self.key, str(token), now):
                self.token = token
                return True
        return False

    def release(self) -> None:
        if self.token is not None:
            self.client.hdel(self.key, str(self.token))
            self.token = None


def make(client: redis.Redis, key: str, ttl_ms: int, limit: int = 1) -> JoinedClockSemaphore:
    return JoinedClockSemaphore(client, key, ttl_ms, limit)


def _hold(impl: str, tmp_path) -> tuple[int, dict]:
    path = tmp_path / "hold.json"
    code = main(["check", "--impl", impl, "--kind", "semaphore", "--check", "hold", "--json", str(path)])
    (row,) = json.loads(path.read_text())["implementations"]
    return code, row


def test_a_clock_that_misreads_microseconds_gives_a_live_holders_permit_away(tmp_path, capsys):
    code, row = _hold("tests.check.test_hold:make", tmp_path)
    assert code == 1, capsys.readouterr().out
    assert "another client acquired" in json.dumps(row) and "mutual-exclusion" in json.dumps(row)


def test_a_correct_semaphore_keeps_its_holders_permit(tmp_path, capsys):
    code, _ = _hold("tests.fixtures.foreign.zset_semaphore:make", tmp_path)
    assert code == 0, capsys.readouterr().out
