"""Server-side Lua: check, increment and write both tables in one atomic round trip.

`register` sends EVALSHA straight on a pooled connection (`impl.roundtrip`:
no retry layer, about a fifth less client overhead per call); `register_many`
uses a redis-py `Script`. Both load the script again when the server answers
NOSCRIPT (after a restart or SCRIPT FLUSH).
"""

from __future__ import annotations

from collections.abc import Iterable

import redis

from contend.impl.registry.base import Registry, check_name, check_names
from contend.impl.roundtrip import LuaScript


class LuaRegistry(Registry):
    strategy = "lua"

    # KEYS[1]: the id counter, KEYS[2]: ids (name -> id), KEYS[3]: names (id -> name). ARGV[1]: the name.
    # The name's id, handed out now if it had none.
    REGISTER = """
    local id = redis.call('HGET', KEYS[2], ARGV[1])
    if id then return tonumber(id) end
    id = redis.call('INCR', KEYS[1])
    redis.call('HSET', KEYS[2], ARGV[1], id)
    redis.call('HSET', KEYS[3], id, ARGV[1])
    return id
    """
    # KEYS: as REGISTER. ARGV: the names. Their ids in order, new ones handed out in that order.
    REGISTER_MANY = """
    local out = {}
    for i, name in ipairs(ARGV) do
        local id = redis.call('HGET', KEYS[2], name)
        if not id then
            id = redis.call('INCR', KEYS[1])
            redis.call('HSET', KEYS[2], name, id)
            redis.call('HSET', KEYS[3], id, name)
        end
        out[i] = tonumber(id)
    end
    return out
    """

    def __init__(self, client: redis.Redis, namespace: str, *, registry: str = "registry") -> None:
        super().__init__(client, namespace, registry=registry)
        self._keys = [self.keys.counter, self.keys.ids, self.keys.names]
        self._register = LuaScript(self.REGISTER)
        self._register_many = client.register_script(self.REGISTER_MANY)

    def register(self, name: str) -> int:
        return int(self._register(self.client, self._keys, [check_name(name)]))

    def register_many(self, names: Iterable[str]) -> list[int]:
        wanted = check_names(names)
        if not wanted:
            return []
        return [int(i) for i in self._register_many(keys=self._keys, args=wanted)]  # type: ignore[union-attr]
