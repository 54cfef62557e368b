"""The run namespace: every key a run writes lives under it, and cleanup deletes only it.

Cleanup is SCAN MATCH *<namespace>:* plus UNLINK, in every database the run
wrote to: the keys that contain the namespace, whose run id is random, so a
library that prefixes the key it is given ("lock:<key>") is cleaned up too.
FLUSHDB and FLUSHALL are never sent: the server may not be ours.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Iterator

import redis

from contend.errors import NamespaceInUse
from contend.impl.connection import client_for_db, db_of, glob_escape


def new_run_id() -> str:
    return secrets.token_hex(6)


class Namespace:
    """A key prefix `contend:<run-id>` on one server, in one or more databases."""

    def __init__(
        self,
        client: redis.Redis,
        prefix: str | None = None,
        *,
        dbs: Iterable[int] = (),
    ) -> None:
        if prefix is not None and (not isinstance(prefix, str) or not prefix.strip()):
            raise ValueError("a namespace must be a non-empty string")
        self.client = client
        self.prefix = prefix or f"contend:{new_run_id()}"
        # Keys that contain the namespace, not only those that start with it: a library may put
        # its own prefix in front of the key it is given (python-redis-lock's "lock:<key>").
        self.pattern = "*" + glob_escape(self.prefix) + ":*"
        self.dbs = sorted({db_of(client), *dbs})

    def key(self, *parts: object) -> str:
        """`<prefix>:<part>:<part>...`"""
        return ":".join([self.prefix, *map(str, parts)])

    def child(self, *parts: object) -> str:
        """A sub-namespace string (for factories that take a namespace)."""
        return self.key(*parts)

    def add_db(self, db: int) -> None:
        if db not in self.dbs:
            self.dbs = sorted({*self.dbs, db})

    def keys(self) -> Iterator[tuple[int, bytes]]:
        """(db, key) for every key under the namespace."""
        for db in self.dbs:
            client = self._client_for(db)
            try:
                for key in client.scan_iter(match=self.pattern, count=1000):
                    yield db, key
            finally:
                if client is not self.client:
                    client.close()

    def count(self) -> int:
        return sum(1 for _ in self.keys())

    def ensure_empty(self) -> None:
        """NamespaceInUse when the namespace already holds keys (another run's, or a user's)."""
        for db, key in self.keys():
            raise NamespaceInUse(
                f"namespace {self.prefix!r} already holds keys on this server "
                f"(e.g. {key.decode(errors='replace')!r} in db {db}); "
                "pick another --namespace or let contend choose a fresh one"
            )

    def cleanup(self) -> int:
        """UNLINK every key under the namespace; returns how many were deleted."""
        deleted = 0
        for db in self.dbs:
            client = self._client_for(db)
            try:
                batch: list[bytes] = []
                for key in client.scan_iter(match=self.pattern, count=1000):
                    batch.append(key)
                    if len(batch) >= 500:
                        deleted += int(client.unlink(*batch))
                        batch.clear()
                if batch:
                    deleted += int(client.unlink(*batch))
            finally:
                if client is not self.client:
                    client.close()
        return deleted

    def _client_for(self, db: int) -> redis.Redis:
        return self.client if db_of(self.client) == db else client_for_db(self.client, db)

    def __repr__(self) -> str:
        return f"<Namespace {self.prefix!r} dbs={self.dbs}>"
