"""Which keys each Redis command reads and writes: the one table the conflict graph reads.

It covers the commands the catalog and common user code send. A command not
in it is an `UnknownCommand` naming it: guessing would make the graph miss a
conflict (a silent pass) or invent one (a false alarm).
Increments (INCR, INCRBY, DECRBY, HINCRBY, ...) are writes that commute with
one another: two of them on one key, in either order, leave the same value.
A script may do anything to the keys it names: each is read and written.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass


class UnknownCommand(Exception):
    """A command the read/write table does not know: no verdict can be given on it."""

    def __init__(self, name: str) -> None:
        super().__init__(
            f"{name} is not in contend's table of the keys commands read and write "
            "(contend/history/access.py): the conflict graph cannot judge a history that sends it"
        )
        self.command = name


@dataclass(frozen=True)
class KeyAccess:
    """One command's access to one key."""

    key: str
    reads: bool
    writes: bool
    #: A write that commutes with every other commuting write on the key (an increment).
    commutes: bool = False


Rule = Callable[[Sequence[str]], list[KeyAccess]]


def _keys(args: Sequence[str], start: int = 1, step: int = 1, stop: int | None = None) -> list[str]:
    return list(args[start:stop:step])


def _read(start: int = 1, step: int = 1, stop: int | None = None) -> Rule:
    return lambda a: [KeyAccess(k, True, False) for k in _keys(a, start, step, stop)]


def _write(start: int = 1, step: int = 1, stop: int | None = None) -> Rule:
    return lambda a: [KeyAccess(k, False, True) for k in _keys(a, start, step, stop)]


def _update(start: int = 1, stop: int | None = 2) -> Rule:
    """Reads and writes (a read-modify-write in one command: GETSET, SETNX, HSETNX, ...)."""
    return lambda a: [KeyAccess(k, True, True) for k in _keys(a, start, 1, stop)]


def _increment(a: Sequence[str]) -> list[KeyAccess]:
    return [KeyAccess(a[1], False, True, commutes=True)]


def _set(a: Sequence[str]) -> list[KeyAccess]:
    flags = {x.upper() for x in a[3:]}
    conditional = bool(flags & {"NX", "XX", "GET", "KEEPTTL"})
    return [KeyAccess(a[1], conditional, True)]


def _script(a: Sequence[str]) -> list[KeyAccess]:
    count = int(a[2])
    return [KeyAccess(k, True, True) for k in a[3 : 3 + count]]


def _script_ro(a: Sequence[str]) -> list[KeyAccess]:
    count = int(a[2])
    return [KeyAccess(k, True, False) for k in a[3 : 3 + count]]


def _none(a: Sequence[str]) -> list[KeyAccess]:
    return []


#: Transaction control: the graph builder reads these itself (WATCH names keys; the rest none).
CONTROL = frozenset({"WATCH", "UNWATCH", "MULTI", "EXEC", "DISCARD"})

TABLE: dict[str, Rule] = {
    # strings
    "GET": _read(1, 1, 2),
    "MGET": _read(),
    "EXISTS": _read(),
    "STRLEN": _read(1, 1, 2),
    "TTL": _read(1, 1, 2),
    "PTTL": _read(1, 1, 2),
    "TYPE": _read(1, 1, 2),
    "SET": _set,
    "SETEX": _write(1, 1, 2),
    "PSETEX": _write(1, 1, 2),
    "MSET": _write(1, 2),
    "SETNX": _update(),
    "GETSET": _update(),
    "GETDEL": _update(),
    "MSETNX": lambda a: [KeyAccess(k, True, True) for k in a[1::2]],
    "APPEND": _update(),
    "DEL": _write(),
    "UNLINK": _write(),
    "EXPIRE": _update(),
    "PEXPIRE": _update(),
    "PERSIST": _update(),
    "INCR": _increment,
    "DECR": _increment,
    "INCRBY": _increment,
    "DECRBY": _increment,
    "INCRBYFLOAT": _increment,
    # hashes (a hash is one key here)
    "HGET": _read(1, 1, 2),
    "HMGET": _read(1, 1, 2),
    "HGETALL": _read(1, 1, 2),
    "HEXISTS": _read(1, 1, 2),
    "HLEN": _read(1, 1, 2),
    "HKEYS": _read(1, 1, 2),
    "HVALS": _read(1, 1, 2),
    "HSET": _write(1, 1, 2),
    "HMSET": _write(1, 1, 2),
    "HDEL": _update(),
    "HSETNX": _update(),
    "HINCRBY": _increment,
    "HINCRBYFLOAT": _increment,
    # sorted sets and lists a bank's ledger might keep
    "ZADD": _update(),
    "ZREM": _update(),
    "ZSCORE": _read(1, 1, 2),
    "ZRANGE": _read(1, 1, 2),
    "ZCARD": _read(1, 1, 2),
    "LPUSH": _write(1, 1, 2),
    "RPUSH": _write(1, 1, 2),
    "LRANGE": _read(1, 1, 2),
    "LLEN": _read(1, 1, 2),
    # scripts: every key named is read and written
    "EVAL": _script,
    "EVALSHA": _script,
    "EVAL_RO": _script_ro,
    "EVALSHA_RO": _script_ro,
    "FCALL": _script,
    "FCALL_RO": _script_ro,
    # no keys
    "PING": _none,
    "ECHO": _none,
    "HELLO": _none,
    "CLIENT": _none,
    "SELECT": _none,
    "AUTH": _none,
    "SCRIPT": _none,
    "INFO": _none,
    "TIME": _none,
    "READONLY": _none,
    "CLUSTER": _none,
    "COMMAND": _none,
}


def accesses(command: Sequence[str]) -> list[KeyAccess]:
    """The keys `command` reads and writes; UnknownCommand when the table does not know it.
    Transaction control (CONTROL) names no data access and gives []."""
    name = str(command[0]).upper()
    if name in CONTROL:
        return []
    rule = TABLE.get(name)
    if rule is None:
        raise UnknownCommand(name)
    return rule([str(x) for x in command])
