"""The run namespace: every key a run writes lives under it, and cleanup deletes only it.

Cleanup is SCAN MATCH *<namespace>* plus UNLINK, in every database the run
wrote to and on every other server the implementation writes to (Redlock's
other masters): the keys that contain the namespace as a whole, whose run id is
random, so a library that prefixes the key it is given ("lock:<key>") is cleaned
up too, and so is code that makes its keys `<namespace>.accounts.a`. "As a whole":
followed by the key's end or a separator (not a letter, digit, `_` or `-`), so the
keys of `<run>:10` are not those of `<run>:1`. FLUSHDB and FLUSHALL are never
sent: the server may not be ours.
"""

from __future__ import annotations

import secrets
import weakref
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import redis

from contend.errors import NamespaceInUse
from contend.impl.connection import client_for_db, db_of, glob_escape

_others: dict[str, redis.Redis] = {}
#: Clients of the other databases a namespace spans, per client it was made with (the harness
#: keeps its connections from one example to the next): made once, not at every look.
_per_db: weakref.WeakKeyDictionary[redis.Redis, dict[int, redis.Redis]] = weakref.WeakKeyDictionary()


def _other_server(url: str) -> redis.Redis:
    """A client of another server the implementation writes to (one per URL, kept)."""
    client = _others.get(url)
    if client is None:
        client = _others[url] = redis.Redis.from_url(url, socket_connect_timeout=5)
    return client


def new_run_id() -> str:
    return secrets.token_hex(6)


class Namespace:
    """A key prefix `contend:<run-id>` on one server, in one or more databases, and on the
    servers at `other_urls` (which the implementation under test also writes to)."""

    def __init__(
        self,
        client: redis.Redis,
        prefix: str | None = None,
        *,
        dbs: Iterable[int] = (),
        other_urls: Sequence[str] = (),
    ) -> None:
        if prefix is not None and (not isinstance(prefix, str) or not prefix.strip()):
            raise ValueError("a namespace must be a non-empty string")
        self.client = client
        self.prefix = prefix or f"contend:{new_run_id()}"
        # Keys that contain the namespace, not only those that start with it: a library may put
        # its own prefix in front of the key it is given (python-redis-lock's "lock:<key>"), and
        # code may join its own parts to it with another separator ("<namespace>.accounts.a").
        self.pattern = "*" + glob_escape(self.prefix) + "*"
        self.dbs = sorted({db_of(client), *dbs})
        self.other_urls = tuple(other_urls)
        #: On a Redis Cluster, keys are hash tags as a whole ({...}): what an implementation
        #: derives from one (`{key}:fence`) lands in its slot, as cluster users are told to do.
        self.tagged = getattr(client, "connection_pool", None) is None

    def key(self, *parts: object) -> str:
        """`<prefix>:<part>:<part>...` (`{<prefix>:<part>...}` on a Redis Cluster)."""
        key = ":".join([self.prefix, *map(str, parts)])
        return "{" + key + "}" if self.tagged else key

    def child(self, *parts: object) -> str:
        """A sub-namespace string `<prefix>:<part>...` (for factories that take a namespace, and
        for the prefix of a namespace within this one): never a hash tag, so the keys made under
        it are tags of their own on a cluster."""
        return ":".join([self.prefix, *map(str, parts)])

    def add_db(self, db: int) -> None:
        if db not in self.dbs:
            self.dbs = sorted({*self.dbs, db})

    def stores(self) -> Iterator[tuple[str, redis.Redis]]:
        """(where, client) for each place the namespace's keys live: each database of the
        server ("db N"), then each other server (its URL). Clients of other databases and
        servers are kept (virtual time reads them at every jump)."""
        places: list[tuple[str, int | str]] = [(f"db {db}", db) for db in self.dbs]
        places += [(url, url) for url in self.other_urls]
        for where, place in places:
            yield where, _other_server(place) if isinstance(place, str) else self._client_for(place)

    def owns(self, key: str | bytes) -> bool:
        """Does `key` hold the namespace as a whole (followed by its end or a separator)?"""
        text = key.decode(errors="replace") if isinstance(key, bytes) else key
        at = text.find(self.prefix)
        while at >= 0:
            after = text[at + len(self.prefix) : at + len(self.prefix) + 1]
            if not after or not (after.isalnum() or after in "_-"):
                return True
            at = text.find(self.prefix, at + 1)
        return False

    def without_expiry(self, containing: str = "") -> list[tuple[str, redis.Redis, bytes]]:
        """(where, its client, key) for every key under the namespace that has no expiry (with
        `containing`, only the keys whose name holds it): what a crash or a lost reply may leave
        behind where an expiry was to come next."""
        part = containing.encode()
        return [
            (w, client, key) for w, client, key in self._owned() if part in key and client.pttl(key) == -1
        ]

    def keys(self) -> Iterator[tuple[str, bytes]]:
        """(where, key) for every key under the namespace (where: "db N" or a server's URL)."""
        for where, _, key in self._owned():
            yield where, key

    def _owned(self) -> Iterator[tuple[str, redis.Redis, bytes]]:
        """(where, its client, key) for every key under the namespace: the one scan of its stores."""
        for where, client in self.stores():
            for key in client.scan_iter(match=self.pattern, count=1000):
                if self.owns(key):
                    yield where, client, key

    def count(self) -> int:
        return sum(1 for _ in self.keys())

    def ensure_empty(self) -> None:
        """NamespaceInUse when the namespace already holds keys (another run's, or a user's)."""
        for where, key in self.keys():
            raise NamespaceInUse(
                f"namespace {self.prefix!r} already holds keys on this server "
                f"(e.g. {key.decode(errors='replace')!r} in {where}); "
                "pick another --namespace or let contend choose a fresh one"
            )

    def cleanup(self) -> int:
        """UNLINK every key under the namespace; returns how many were deleted."""
        deleted = 0
        for _, client in self.stores():
            batch: list[bytes] = []
            for key in client.scan_iter(match=self.pattern, count=1000):
                if not self.owns(key):
                    continue
                batch.append(key)
                if len(batch) >= 500:
                    deleted += int(client.unlink(*batch))
                    batch.clear()
            if batch:
                deleted += int(client.unlink(*batch))
        return deleted

    def _client_for(self, db: int) -> redis.Redis:
        if db_of(self.client) == db:
            return self.client
        try:
            clients = _per_db.setdefault(self.client, {})
        except TypeError:  # a client that cannot be weakly referenced: one for this look only
            return client_for_db(self.client, db)
        if db not in clients:
            clients[db] = client_for_db(self.client, db)
        return clients[db]

    def __repr__(self) -> str:
        others = f" others={list(self.other_urls)}" if self.other_urls else ""
        return f"<Namespace {self.prefix!r} dbs={self.dbs}{others}>"


def cluster_masters(client: Any) -> list[str]:
    """host:port of each master a Redis Cluster client knows, in the order of the slots they
    serve (the same order whichever node the client asked)."""
    first: dict[str, int] = {}
    for slot, nodes in client.nodes_manager.slots_cache.items():
        if nodes:
            first[nodes[0].name] = min(first.get(nodes[0].name, slot), slot)
    return sorted(first, key=first.__getitem__)


def placed_prefix(client: Any, base: str, placement: int, anchor: Sequence[str]) -> str:
    """A namespace prefix under `base` for placement number `placement` on a Redis Cluster, whose
    key `anchor` (as `Namespace.key(*anchor)`) is served by master `placement % masters`: the
    first of `<base>:<placement>`, `<base>:<placement>.1`, ... that is (the same every time)."""
    masters = cluster_masters(client)
    wanted = masters[placement % len(masters)] if masters else None
    for salt in range(4096):
        prefix = f"{base}:{placement}" + (f".{salt}" if salt else "")
        key = Namespace(client, prefix).key(*anchor)
        if wanted is None or client.get_node_from_key(key).name == wanted:
            return prefix
    return f"{base}:{placement}"
