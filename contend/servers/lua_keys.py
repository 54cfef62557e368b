"""Which key a Lua script touched at a given line: the server refuses a script that reaches a key
it did not declare in KEYS on a Redis Cluster ("non local key", or "keys that do not hash to the
same slot") and says only the line, so contend reads that line of the script.

Each `redis.call` / `redis.pcall` on the line is read: its key arguments (the first argument of
most commands, every one of DEL/MGET/EXISTS..., both of RENAME/LMOVE/SMOVE..., every other one of
MSET) are worked out when they are made of string literals, `KEYS[n]`, `ARGV[n]` and local
variables assigned earlier from those, joined with `..`. What cannot be worked out is left out:
the line itself is reported too.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

#: Commands whose every argument is a key.
_ALL_KEYS = frozenset(
    [
        "DEL",
        "UNLINK",
        "EXISTS",
        "MGET",
        "TOUCH",
        "WATCH",
        "SINTER",
        "SUNION",
        "SDIFF",
        "PFCOUNT",
        "PFMERGE",
        "SINTERSTORE",
        "SUNIONSTORE",
        "SDIFFSTORE",
    ]
)
#: Commands whose first two arguments are keys.
_TWO_KEYS = frozenset(["RENAME", "RENAMENX", "RPOPLPUSH", "LMOVE", "SMOVE", "COPY", "BLMOVE", "BRPOPLPUSH"])
#: Commands whose keys are every other argument, from the first.
_PAIRS = frozenset({"MSET", "MSETNX"})

_CALL = re.compile(r"redis\s*\.\s*p?call\s*\(")
_LOCAL = re.compile(r"^\s*local\s+([A-Za-z_]\w*)\s*=\s*(.+?)\s*;?\s*$")
_INDEXED = re.compile(r"^(KEYS|ARGV)\s*\[\s*(\d+)\s*\]$")
_LINE = re.compile(r"@user_script:\s*(\d+)")


@dataclass(frozen=True)
class ScriptLine:
    """The line of a script the server refused, and the keys its calls name there."""

    number: int
    text: str
    keys: tuple[str, ...]


def refused_line(error: str) -> int | None:
    """The line of the script an error names (`@user_script:3`), if any."""
    found = _LINE.search(error)
    return int(found.group(1)) if found else None


def keys_at(source: str, number: int, keys: Sequence[str], argv: Sequence[str]) -> ScriptLine | None:
    """The keys the calls at line `number` of `source` name, given the script's KEYS and ARGV."""
    lines = source.split("\n")
    if not 1 <= number <= len(lines):
        return None
    text = lines[number - 1].strip()
    named: list[str] = []
    for call in _CALL.finditer(text):
        args = _arguments(text[call.end() :])
        if not args:
            continue
        command = _evaluate(args[0], lines[: number - 1], keys, argv, 0)
        operands = args[1:]
        name = (command or "").upper()
        if name in _ALL_KEYS:
            chosen = operands
        elif name in _TWO_KEYS:
            chosen = operands[:2]
        elif name in _PAIRS:
            chosen = operands[::2]
        else:
            chosen = operands[:1]
        for expr in chosen:
            value = _evaluate(expr, lines[: number - 1], keys, argv, 0)
            if value is not None and value not in named:
                named.append(value)
    return ScriptLine(number, text, tuple(named))


def _arguments(rest: str) -> list[str]:
    """The top-level comma-separated arguments of a call whose '(' was just read."""
    args: list[str] = []
    depth, quote, start = 0, "", 0
    for i, char in enumerate(rest):
        if quote:
            if char == quote and rest[i - 1] != "\\":
                quote = ""
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                args.append(rest[start:i].strip())
                return [a for a in args if a]
            depth -= 1
        elif char == "," and depth == 0:
            args.append(rest[start:i].strip())
            start = i + 1
    return []  # the call goes on past the line: not worked out


def _evaluate(
    expr: str, before: list[str], keys: Sequence[str], argv: Sequence[str], depth: int
) -> str | None:
    """The string `expr` stands for, or None when it is not made of what this module reads."""
    if depth > 5:
        return None
    parts = _concatenated(expr)
    values = []
    for part in parts:
        value = _atom(part.strip(), before, keys, argv, depth)
        if value is None:
            return None
        values.append(value)
    return "".join(values)


def _concatenated(expr: str) -> list[str]:
    """`a .. b .. c` split at its top-level `..` (not inside quotes)."""
    parts, quote, start, i = [], "", 0, 0
    while i < len(expr):
        char = expr[i]
        if quote:
            if char == quote and expr[i - 1] != "\\":
                quote = ""
        elif char in "'\"":
            quote = char
        elif expr.startswith("..", i):
            parts.append(expr[start:i])
            i += 2
            start = i
            continue
        i += 1
    parts.append(expr[start:])
    return parts


def _atom(part: str, before: list[str], keys: Sequence[str], argv: Sequence[str], depth: int) -> str | None:
    if len(part) >= 2 and part[0] == part[-1] and part[0] in "'\"":
        return part[1:-1]
    if re.fullmatch(r"-?\d+", part):
        return part
    if found := _INDEXED.match(part):
        values = keys if found.group(1) == "KEYS" else argv
        index = int(found.group(2))
        return values[index - 1] if 1 <= index <= len(values) else None
    if part.startswith("tostring(") and part.endswith(")"):
        return _evaluate(part[len("tostring(") : -1], before, keys, argv, depth + 1)
    if re.fullmatch(r"[A-Za-z_]\w*", part):
        for at in range(len(before) - 1, -1, -1):
            found = _LOCAL.match(before[at])
            if found and found.group(1) == part:
                return _evaluate(found.group(2), before[:at], keys, argv, depth + 1)
    return None
