"""What every registry strategy shares: the interface, input checks, reads."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import redis

from contend.impl.registry.keys import RegistryKeys

#: The longest name a registry accepts, in UTF-8 bytes.
MAX_NAME_BYTES = 1024


class RegistrationError(Exception):
    """A registration could not be completed (the seed's "Failed to register")."""


class RetriesExhausted(RegistrationError):
    """An optimistic strategy lost every race it was allowed to retry."""


def check_name(name: Any) -> str:
    """A name is a non-empty str (or UTF-8 bytes) of at most MAX_NAME_BYTES bytes."""
    if isinstance(name, bytes):
        try:
            name = name.decode()
        except UnicodeDecodeError:
            raise ValueError(f"name {name[:40]!r} is not valid UTF-8") from None
    if not isinstance(name, str):
        raise ValueError(f"name must be a str or bytes, got {type(name).__name__}: {name!r}")
    if not name:
        raise ValueError("name must not be empty")
    size = len(name.encode())
    if size > MAX_NAME_BYTES:
        raise ValueError(f"name is {size} bytes long; the maximum is {MAX_NAME_BYTES} bytes")
    return name


def check_names(names: Any) -> list[str]:
    """A list (or other iterable, not a single string) of valid names, checked before any write."""
    if isinstance(names, str | bytes):
        raise ValueError("register_many takes a list of names, not a single string")
    if not isinstance(names, Iterable):
        raise ValueError(f"register_many takes a list of names, got {type(names).__name__}")
    return [check_name(n) for n in names]


def check_id(ident: Any) -> int:
    if isinstance(ident, bool) or not isinstance(ident, int):
        raise ValueError(f"an id is an int, got {type(ident).__name__}: {ident!r}")
    return ident


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Registry:
    """Base of the single-database strategies; subclasses write `register` (and may batch)."""

    #: Short name used by the catalog and the CLI.
    strategy = "abstract"

    def __init__(self, client: redis.Redis, namespace: str, *, registry: str = "registry") -> None:
        self.client = client
        self.keys = RegistryKeys(namespace, registry)

    def register(self, name: str) -> int:
        """The id of `name`, handing out the next id if it has none yet."""
        raise NotImplementedError

    def register_many(self, names: Iterable[str]) -> list[int]:
        """Ids for several names, in order; the default registers one by one."""
        return [self.register(n) for n in check_names(names)]

    def lookup(self, name: str) -> int | None:
        """The id of `name`, or None when it was never registered."""
        found = self.client.hget(self.keys.ids, check_name(name))
        return None if found is None else int(found)

    def reverse(self, ident: int) -> str | None:
        """The name registered under `ident`, or None."""
        found = self.client.hget(self.keys.names, check_id(ident))
        return None if found is None else text(found)

    def count(self) -> int:
        """How many names are registered."""
        return int(self.client.hlen(self.keys.ids))

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.keys.ids!r}>"


class CommittingRegistry(Registry):
    """A registry whose new names are committed together: a known name costs one HGET (HMGET for
    many), and only the names still missing go to `_commit`, which gives them ids."""

    def register(self, name: str) -> int:
        name = check_name(name)
        found = self.client.hget(self.keys.ids, name)
        if found is not None:
            return int(found)
        return self._commit([name])[name]

    def register_many(self, names: Iterable[str]) -> list[int]:
        wanted = check_names(names)
        if not wanted:
            return []
        found = self.client.hmget(self.keys.ids, wanted)
        ids = {n: int(v) for n, v in zip(wanted, found, strict=True) if v is not None}
        missing = list(dict.fromkeys(n for n in wanted if n not in ids))
        if missing:
            ids.update(self._commit(missing))
        return [ids[n] for n in wanted]

    def _commit(self, names: list[str]) -> dict[str, int]:
        """Ids for `names` (distinct, none known a moment ago): existing ones, or new ones."""
        raise NotImplementedError
