"""Which keys each Redis command reads and writes, from the server's own command table.

The table is the server's COMMAND reply, read once per server (`CommandTable`):

* Redis 7+ and Valkey give key specifications: where each key argument is (at an index, or
  after a keyword; a range, or a count the arguments give) and what the command does to it:
  RO reads, RW reads and writes, OW overwrites (writes without reading), RM deletes (a write).
  A specification the server marks INCOMPLETE, or one whose keys only the server can find, is
  asked of the server (COMMAND GETKEYSANDFLAGS), once per distinct command.
* Redis 6.2 gives the first key, the last and the step, and flags for the whole command:
  `readonly` (each key read) or `write`. A write with one key reads and writes it; a write with
  several does not say which it writes, and only OVERRIDES can; `movablekeys`: the server finds
  the keys (COMMAND GETKEYS).

OVERRIDES hold only what the server's table cannot tell:

* increments (INCR, DECRBY, HINCRBY, ...) are writes that commute with one another: two of them
  on one key, in either order, leave the same value (their reply is not taken as a read);
* SET's flags vary with its arguments: a plain SET overwrites, with NX, XX, GET or KEEPTTL it
  reads the key too;
* a read of a key's existence, type or TTL (EXISTS, TYPE, TTL, PTTL, EXPIRETIME, PEXPIRETIME) is
  not changed by an increment of a key that exists, as a balance does once opened: the two commute
  (a key specification says RO, with or without ACCESS, and not what an increment leaves alone);
* on a server without key specifications, the writes that write every key they name (DEL, MSET,
  RENAME, ...).

A script's own keys (EVAL, EVALSHA, FCALL and their _RO forms) count only where the server's
record did not show the commands the script ran (`script_shown`); then each key it names is read
and written (read only for the _RO forms), as the server's own specification assumes.

A command the table cannot place (not in it, or a write on several keys of an old server) is a
`Placement` with `unplaced` saying why, and the keys it names where they can be found: the
conflict graph decides whether it matters (it does only where it touches data the model judges).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


class UnknownCommand(Exception):
    """A command the server's table cannot place touched data the model judges: the conflict graph
    cannot give a verdict on a history that sends it (nothing else is affected)."""

    def __init__(self, name: str, why: str = "", keys: Iterable[str] = ()) -> None:
        shown = ", ".join(sorted(keys))
        super().__init__(
            f"{name} {why or 'is not in the server command table'}"
            + (f"; it touched {shown}" if shown else "")
            + ": the conflict graph cannot judge serializability where it runs"
        )
        self.command = name
        self.why = why
        self.keys = tuple(sorted(keys))


@dataclass(frozen=True)
class KeyAccess:
    """One command's access to one key."""

    key: str
    reads: bool
    writes: bool
    #: A write that commutes with every other commuting write on the key (an increment).
    commutes: bool = False
    #: A read of what an increment leaves as it was (whether the key exists, its type, its TTL),
    #: not of its value: it commutes with increments.
    metadata: bool = False


@dataclass(frozen=True)
class Placement:
    """What one command did to which keys; `unplaced` says why the table could not tell ("" when it
    could), and `keys` then holds the keys it names (None: not even those can be found)."""

    accesses: tuple[KeyAccess, ...] = ()
    unplaced: str = ""
    keys: tuple[str, ...] | None = ()


#: Transaction control: the graph builder reads these itself (WATCH names keys; the rest none).
CONTROL = frozenset({"WATCH", "UNWATCH", "MULTI", "EXEC", "DISCARD"})
#: Scripts: their accesses are the commands they run (what the server's record shows).
SCRIPTS = frozenset({"EVAL", "EVALSHA", "EVAL_RO", "EVALSHA_RO", "FCALL", "FCALL_RO"})

# The overrides: what the server's table cannot tell ---------------------------------------------
#: Increments: writes that commute with one another.
COMMUTING = frozenset({"INCR", "DECR", "INCRBY", "DECRBY", "INCRBYFLOAT", "HINCRBY", "HINCRBYFLOAT"})
#: SET's options under which it reads the key as well as writing it.
SET_READS = frozenset({"NX", "XX", "GET", "KEEPTTL"})
#: Reads of a key's existence, type or TTL only: an increment of a key that exists leaves them.
METADATA_READS = frozenset({"EXISTS", "TYPE", "TTL", "PTTL", "EXPIRETIME", "PEXPIRETIME"})
#: For servers without key specifications (Redis 6.2): writes that write every key they name.
WRITES_EVERY_KEY = frozenset(
    {"DEL", "UNLINK", "MSET", "MSETNX", "RENAME", "RENAMENX", "SMOVE", "LMOVE", "RPOPLPUSH", "BLMOVE",
     "BRPOPLPUSH", "SWAPDB"}
)  # fmt: skip

#: COMMAND GETKEYS[ANDFLAGS] as the server answers it (None: it cannot say).
Ask = Callable[[Sequence[str]], "list[Any] | None"]


def _text(value: Any) -> str:
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _mapping(value: Any) -> dict[str, Any]:
    """A RESP3 map, or its RESP2 form (a flat list of names and values), as a dict."""
    if isinstance(value, dict):
        return {_text(k): v for k, v in value.items()}
    items = list(value or [])
    return {_text(items[i]): items[i + 1] for i in range(0, len(items) - 1, 2)}


@dataclass(frozen=True)
class KeySpec:
    """One key specification of a command (Redis 7+)."""

    begin: str  # index, keyword or unknown
    index: int = 0
    keyword: str = ""
    startfrom: int = 0
    find: str = "unknown"  # range, keynum or unknown
    lastkey: int = 0
    keystep: int = 1
    limit: int = 0
    keynumidx: int = 0
    firstkey: int = 0
    flags: frozenset[str] = frozenset()

    @classmethod
    def parse(cls, raw: Any) -> KeySpec:
        spec = _mapping(raw)
        begin = _mapping(spec.get("begin_search"))
        find = _mapping(spec.get("find_keys"))
        b, f = _mapping(begin.get("spec")), _mapping(find.get("spec"))
        return cls(
            begin=_text(begin.get("type", "unknown")),
            index=int(b.get("index", 0) or 0),
            keyword=_text(b.get("keyword", "")),
            startfrom=int(b.get("startfrom", 0) or 0),
            find=_text(find.get("type", "unknown")),
            lastkey=int(f.get("lastkey", 0) or 0),
            keystep=int(f.get("keystep", 1) or 1),
            limit=int(f.get("limit", 0) or 0),
            keynumidx=int(f.get("keynumidx", 0) or 0),
            firstkey=int(f.get("firstkey", 0) or 0),
            flags=frozenset(_text(x).upper() for x in spec.get("flags") or ()),
        )

    @property
    def complete(self) -> bool:
        return self.begin != "unknown" and self.find != "unknown" and "INCOMPLETE" not in self.flags

    def positions(self, argc: int, args: Sequence[str]) -> list[int]:
        """The indexes of the keys this specification finds in `args` (as the server finds them)."""
        if self.begin == "index":
            first = self.index
        else:  # keyword
            start = self.startfrom if self.startfrom > 0 else argc + self.startfrom
            stop = argc - 1 if self.startfrom > 0 else 0
            step = 1 if start <= stop else -1
            first = -1
            i = start
            while 1 <= i < argc:
                if args[i].upper() == self.keyword.upper():
                    first = i + 1
                    break
                if i == stop:
                    break
                i += step
            if first < 0:
                return []
        if self.find == "range":
            if self.lastkey >= 0:
                last = first + self.lastkey
            elif not self.limit:
                last = argc + self.lastkey
            else:
                last = first + ((argc - first) // self.limit + self.lastkey)
            step = self.keystep
        else:  # keynum
            at = first + self.keynumidx
            if at >= argc:
                return []
            try:
                count = int(args[at])
            except ValueError:
                return []
            first += self.firstkey
            last = first + count - 1
            step = self.keystep
        return [i for i in range(first, last + 1, max(1, step)) if i < argc]


@dataclass(frozen=True)
class CommandInfo:
    """One command (or subcommand, `object|encoding`) of the server's table."""

    name: str
    flags: frozenset[str]
    first: int
    last: int
    step: int
    specs: tuple[KeySpec, ...] | None  # None: the server gives none (Redis 6.2)
    subcommands: dict[str, CommandInfo] = field(default_factory=dict)

    @classmethod
    def parse(cls, raw: Sequence[Any]) -> CommandInfo:
        name = _text(raw[0]).lower()
        specs = tuple(KeySpec.parse(s) for s in raw[8]) if len(raw) > 8 else None
        subs = {}
        if len(raw) > 9:
            for sub in raw[9] or ():
                parsed = cls.parse(sub)
                subs[parsed.name] = parsed
        return cls(
            name,
            frozenset(_text(f).lower() for f in raw[2] or ()),
            int(raw[3]),
            int(raw[4]),
            int(raw[5]),
            specs,
            subs,
        )


def _spec_access(key: str, flags: Iterable[str]) -> KeyAccess | None:
    """A key's access from its specification's flags (RO, RW, OW, RM); None for NOT_KEY."""
    flags = {f.upper() for f in flags}
    if "NOT_KEY" in flags:
        return None
    if "RW" in flags:
        return KeyAccess(key, True, True)
    if "OW" in flags or "RM" in flags:
        return KeyAccess(key, False, True)
    return KeyAccess(key, True, False)


class CommandTable:
    """The server's command table, placing each command's access to each key (`place`)."""

    def __init__(self, reply: Iterable[Any], ask: Ask | None = None, *, describe: str = "") -> None:
        self.commands: dict[str, CommandInfo] = {}
        for raw in reply:
            info = CommandInfo.parse(raw)
            self.commands[info.name] = info
        #: Does the server give key specifications (Redis 7+)?
        self.has_key_specs = any(c.specs is not None for c in self.commands.values())
        self.ask = ask
        #: What server the table came from, for messages ("Redis 6.2.5").
        self.describe = describe
        self._asked: dict[tuple[str, ...], list[Any] | None] = {}
        #: How many times the server was asked (COMMAND GETKEYS[ANDFLAGS]).
        self.asked = 0

    def info(self, args: Sequence[str]) -> CommandInfo | None:
        info = self.commands.get(args[0].lower())
        if info is not None and info.subcommands and len(args) > 1:
            return info.subcommands.get(f"{info.name}|{args[1].lower()}", info)
        return info

    def place(self, command: Sequence[Any], *, script_shown: bool = False) -> Placement:
        """What `command` (its name first) did to which keys. `script_shown`: the server's record
        showed the commands a script ran, which carry its accesses (its own keys then count for
        nothing)."""
        args = [_text(a) for a in command]
        if not args:
            return Placement()
        name = args[0].upper()
        if name in CONTROL:
            return Placement()
        if name in SCRIPTS:
            return Placement() if script_shown else _script(args)
        info = self.info(args)
        if info is None:
            return Placement(unplaced="is not in the server's command table", keys=None)
        if info.specs is not None and all(s.complete for s in info.specs):
            found = [(args[i], spec.flags) for spec in info.specs for i in spec.positions(len(args), args)]
        elif info.specs is None and "movablekeys" not in info.flags:
            found = [(args[i], frozenset()) for i in _old_positions(info, len(args))]
        else:
            asked = self._ask(args)
            if asked is None:
                return Placement(unplaced="names keys the server could not find", keys=None)
            found = asked
        if not found:
            return Placement()
        if info.specs is None or any(not flags for _, flags in found):
            return self._old_access(args, info, [k for k, _ in found])
        return Placement(
            tuple(a for k, flags in found if (a := _override(name, args, _spec_access(k, flags))))
        )

    def _ask(self, args: list[str]) -> list[tuple[str, frozenset[str]]] | None:
        key = tuple(args)
        if key not in self._asked:
            if len(self._asked) > 4096:
                self._asked.clear()
            self._asked[key] = self.ask(args) if self.ask is not None else None
            self.asked += 1
        reply = self._asked[key]
        if reply is None:
            return None
        out: list[tuple[str, frozenset[str]]] = []
        for item in reply:
            if isinstance(item, list | tuple):
                out.append((_text(item[0]), frozenset(_text(f).upper() for f in item[1] or ())))
            else:
                out.append((_text(item), frozenset()))
        return out

    def _old_access(self, args: Sequence[str], info: CommandInfo, keys: list[str]) -> Placement:
        """Placing from the whole command's flags (a server without key specifications)."""
        name = args[0].upper()
        if "write" not in info.flags:
            return Placement(tuple(KeyAccess(k, True, False, metadata=name in METADATA_READS) for k in keys))
        if len(set(keys)) > 1 and name not in WRITES_EVERY_KEY:
            why = "writes some of its keys, and the server's table (no key specifications) does not say which"
            return Placement(unplaced=why, keys=tuple(keys))
        if name in COMMUTING:
            return Placement((KeyAccess(keys[0], False, True, commutes=True),))
        if name == "SET":
            return Placement((KeyAccess(keys[0], bool(SET_READS & {a.upper() for a in args[3:]}), True),))
        return Placement(tuple(KeyAccess(k, True, True) for k in dict.fromkeys(keys)))


def _old_positions(info: CommandInfo, argc: int) -> list[int]:
    if info.first <= 0:
        return []
    last = info.last if info.last >= 0 else argc + info.last
    return list(range(info.first, min(last, argc - 1) + 1, max(1, info.step)))


def _override(name: str, args: Sequence[str], access: KeyAccess | None) -> KeyAccess | None:
    """OVERRIDES applied to one access the server's table placed."""
    if access is None:
        return None
    if name in METADATA_READS and not access.writes:
        return KeyAccess(access.key, True, False, metadata=True)
    if name in COMMUTING:
        return KeyAccess(access.key, False, True, commutes=True)
    if name == "SET":
        return KeyAccess(access.key, bool(SET_READS & {a.upper() for a in args[3:]}), True)
    return access


def _script(args: Sequence[str]) -> Placement:
    """A script whose commands the record did not show: each key it names read and written (read
    only, for the _RO forms)."""
    try:
        count = int(args[2])
    except (IndexError, ValueError):
        return Placement()
    read_only = args[0].upper().endswith("_RO")
    return Placement(tuple(KeyAccess(k, True, not read_only) for k in args[3 : 3 + count]))
