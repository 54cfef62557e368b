"""Server-side Lua: check and move in one atomic round trip."""

from __future__ import annotations

import redis

from contend.impl.roundtrip import LuaScript
from contend.impl.transactions.bank import Bank, UnknownAccount, check_transfer


class LuaBank(Bank):
    strategy = "lua"

    # KEYS[1]: the account debited, KEYS[2]: the account credited. ARGV[1]: the amount.
    # 1 when moved, 0 when KEYS[1] holds less than the amount, -1 or -2 when KEYS[1] or KEYS[2]
    # does not exist (nothing written in those three cases).
    TRANSFER = """
    local a = redis.call('GET', KEYS[1])
    if not a then return -1 end
    local b = redis.call('GET', KEYS[2])
    if not b then return -2 end
    local amount = tonumber(ARGV[1])
    if tonumber(a) < amount then return 0 end
    redis.call('SET', KEYS[1], tonumber(a) - amount)
    redis.call('SET', KEYS[2], tonumber(b) + amount)
    return 1
    """

    def __init__(self, client: redis.Redis, namespace: str, *, bank: str = "bank") -> None:
        super().__init__(client, namespace, bank=bank)
        self._transfer = LuaScript(self.TRANSFER)

    def transfer(self, src: str, dst: str, amount: int) -> bool:
        src, dst, amount = check_transfer(src, dst, amount)
        moved = int(self._transfer(self.client, [self.keys.account(src), self.keys.account(dst)], [amount]))
        if moved < 0:
            raise UnknownAccount(f"no account called {(src, dst)[-moved - 1]!r} (open it first)")
        return moved == 1
