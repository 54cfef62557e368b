"""The seed's own API and three-database layout: `Registerer(counter_key, db_counter, db, db_invert)`.

    db_counter   <prefix><counter_key>  -> highest id handed out
    db           <prefix><name>         -> id
    db_invert    <prefix><id>           -> name   (optional)

`strategy` picks the algorithm:

* "seed_transaction" (the default, as published) - KNOWN-BAD, see
  `impl.registry.seed_transaction`: INCR runs at once, SETNX goes through other
  connections, so one name registered twice at once raises and leaves a gap;
* "naive" - the seed's register_naive, KNOWN-BAD;
* "lua" - the same layout made safe: one script SELECTs each database in turn.

WATCH cannot protect keys in three databases reached through three
connections, so there is no "watch" strategy for this layout; use the
single-database strategies in `impl.registry` for that. `prefix` puts every
key under a namespace (empty, as in the seed, by default); `client` reuses a
redis-py client's server, credentials and TLS instead of `host` and `port`.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import redis

from contend.impl.connection import client_for_db, glob_escape
from contend.impl.registry.base import RegistrationError, check_id, check_name, check_names, text

SEED_STRATEGIES = ("seed_transaction", "naive", "lua")


class Registerer:
    """Seed 000's class, in Python 3, with the registry interface around it."""

    # KEYS[1]: the counter (in db_counter), KEYS[2]: the name's forward key (in db).
    # ARGV[1]: the name, ARGV[2]: db_counter, ARGV[3]: db, ARGV[4]: db_invert ('' if none),
    # ARGV[5]: the inverse keys' prefix. The name's id, handed out now if it had none.
    REGISTER_LUA = """
    redis.call('SELECT', ARGV[3])
    local id = redis.call('GET', KEYS[2])
    if id then return tonumber(id) end
    redis.call('SELECT', ARGV[2])
    id = redis.call('INCR', KEYS[1])
    redis.call('SELECT', ARGV[3])
    redis.call('SET', KEYS[2], id)
    if ARGV[4] ~= '' then
        redis.call('SELECT', ARGV[4])
        redis.call('SET', ARGV[5] .. id, ARGV[1])
    end
    return id
    """

    def __init__(
        self,
        counter_key: str,
        db_counter: int,
        db: int,
        db_invert: int | None = None,
        host: str = "localhost",
        port: int = 6379,
        *,
        strategy: str = "seed_transaction",
        prefix: str = "",
        client: redis.Redis | None = None,
    ) -> None:
        if strategy not in SEED_STRATEGIES:
            raise ValueError(
                f"unknown strategy {strategy!r} for the seed layout; choose one of "
                f"{', '.join(SEED_STRATEGIES)} (WATCH needs the single-database layout)"
            )
        if not isinstance(counter_key, str) or not counter_key:
            raise ValueError("counter_key must be a non-empty string")
        self.counter_key = counter_key
        self.db_counter = db_counter
        self.db = db
        self.db_invert = db_invert
        self.host = host
        self.port = port
        self.strategy = strategy
        self.prefix = prefix
        # `client`, when given, is a template: same server, credentials and TLS.
        template = client or redis.Redis(host, port)
        self.redis = client_for_db(template, db)
        self.redis_cnt = client_for_db(template, db_counter)
        self.redis_inv = client_for_db(template, db_invert) if db_invert is not None else None
        self._lua = self.redis.register_script(self.REGISTER_LUA)

    # Key names -------------------------------------------------------------
    def _counter(self) -> str:
        return self.prefix + self.counter_key

    def _forward(self, name: str) -> str:
        return self.prefix + name

    def _inverse(self, ident: int | bytes | str) -> str:
        return self.prefix + text(ident)

    # The seed's two algorithms ----------------------------------------------
    def register_naive(self, name: str) -> int:
        """The seed's register_naive, KNOWN-BAD."""
        name = check_name(name)
        index: Any = self.redis.get(self._forward(name))
        if index is None:
            index = self.redis_cnt.incr(self._counter())
            self._setnx_both(name, index)
        return int(index)

    def _seed_transaction(self, name: str) -> int:
        def attempt(pipe: redis.client.Pipeline) -> int:
            index: Any = self.redis.get(self._forward(name))
            if index is None:
                index = pipe.incr(self._counter())
                self._setnx_both(name, index)
            return int(index)

        result: Any = self.redis_cnt.transaction(attempt, self._counter(), value_from_callable=True)  # type: ignore[arg-type]
        return int(result)

    def _setnx_both(self, name: str, index: Any) -> None:
        if not self.redis.setnx(self._forward(name), index):
            raise RegistrationError(f"Failed to register: db={self.db}, key={name}, value={text(index)}")
        if self.redis_inv is not None and not self.redis_inv.setnx(self._inverse(index), name):
            raise RegistrationError(
                f"Failed to register: db={self.db_invert}, key={text(index)}, value={name}"
            )

    # The registry interface -------------------------------------------------
    def register(self, name: str) -> int:
        """The id of `name`, by the strategy chosen at construction."""
        name = check_name(name)
        if self.strategy == "naive":
            return self.register_naive(name)
        if self.strategy == "lua":
            result = self._lua(keys=[self._counter(), self._forward(name)], args=self._lua_args(name))
            return int(result)  # type: ignore[arg-type]
        return self._seed_transaction(name)

    def register_many(self, names: Iterable[str]) -> list[int]:
        """With "lua", every script call goes in one pipelined round trip; else one by one."""
        wanted = check_names(names)
        if self.strategy != "lua":
            return [self.register(n) for n in wanted]
        with self.redis.pipeline(transaction=False) as pipe:
            for name in wanted:
                self._lua(keys=[self._counter(), self._forward(name)], args=self._lua_args(name), client=pipe)
            return [int(i) for i in pipe.execute()]

    def _lua_args(self, name: str) -> list[Any]:
        invert = "" if self.db_invert is None else str(self.db_invert)
        return [name, self.db_counter, self.db, invert, self.prefix]

    def lookup(self, name: str) -> int | None:
        found = self.redis.get(self._forward(check_name(name)))
        return None if found is None else int(found)

    def reverse(self, ident: int) -> str | None:
        if self.redis_inv is None:
            raise RegistrationError("reverse() needs db_invert: this Registerer keeps no inverse table")
        found = self.redis_inv.get(self._inverse(check_id(ident)))
        return None if found is None else text(found)

    def count(self) -> int:
        """Names registered: DBSIZE of `db` as the seed's test counts, or the prefix's keys."""
        if not self.prefix:
            return int(self.redis.dbsize())
        return sum(1 for _ in self.redis.scan_iter(match=glob_escape(self.prefix) + "*", count=1000))

    def close(self) -> None:
        for client in (self.redis, self.redis_cnt, self.redis_inv):
            if client is not None:
                client.close()
