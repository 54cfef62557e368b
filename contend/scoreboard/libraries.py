"""The rows of the scoreboard: one library in one documented configuration each.

A row names the adapter factory (`contend.adapters`), the PyPI distribution
whose version it reports, and what the library claims in its own
documentation, no more: a lock that never expires does not claim crash
liveness. Libraries are imported only when their row runs; one that is not
installed is skipped with the pip command that installs it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from contend.errors import ContendError
from contend.impl.catalog import MUTUAL_EXCLUSION, SAFE_RELEASE
from contend.subject.claims import LOCK_CLAIMS

INSTALL_HINT = "pip install 'contend[libs]'"


class LibraryMissing(ContendError):
    """The library a row needs is not installed."""


@dataclass(frozen=True)
class Library:
    """One scoreboard row."""

    key: str  # what --lib takes
    title: str  # the library and its configuration, in words
    distribution: str  # on PyPI, for the version
    adapter: str  # module:function in contend.adapters
    claims: frozenset[str] = LOCK_CLAIMS
    #: Servers the lock spans (Redlock's masters): the others are embedded servers of their own.
    masters: int = 1
    configuration: str = ""

    def version(self) -> str:
        """The installed version, or LibraryMissing."""
        try:
            return metadata.version(self.distribution)
        except metadata.PackageNotFoundError:
            raise LibraryMissing(
                f"{self.key}: {self.distribution} is not installed ({INSTALL_HINT})"
            ) from None

    def load(self) -> Callable[..., Any]:
        """The adapter's function (importing the library), or LibraryMissing."""
        module_name, name = self.adapter.split(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise LibraryMissing(
                f"{self.key}: {self.distribution} cannot be imported ({exc}); {INSTALL_HINT}"
            ) from None
        made: Callable[..., Any] = getattr(module, name)
        return made

    def factory(self, other_urls: Sequence[str] = ()) -> Callable[..., Any]:
        """The lock-protocol factory (for several masters: built over `other_urls`, the servers
        besides the client's), or LibraryMissing."""
        made = self.load()
        return made(list(other_urls)) if self.masters > 1 else made


LIBRARIES: tuple[Library, ...] = (
    Library(
        "redis-py",
        "redis-py Lock",
        "redis",
        "contend.adapters.redis_py:factory",
        configuration="`client.lock(name, timeout=ttl, sleep=0.005)`, thread-local token (the default)",
    ),
    Library(
        "redis-py-asyncio",
        "redis-py asyncio Lock",
        "redis",
        "contend.adapters.redis_py_async:factory",
        configuration="`redis.asyncio` client, `client.lock(name, timeout=ttl, sleep=0.005)`: coroutines, "
        "judged by the async battery (cancellation included)",
    ),
    Library(
        "python-redis-lock",
        "python-redis-lock",
        "python-redis-lock",
        "contend.adapters.python_redis_lock:factory",
        configuration="`redis_lock.Lock(client, name, expire=ttl)`, whole seconds",
    ),
    Library(
        "python-redis-lock-renewal",
        "python-redis-lock, auto_renewal",
        "python-redis-lock",
        "contend.adapters.python_redis_lock:auto_renewal_factory",
        configuration="`redis_lock.Lock(client, name, expire=ttl, auto_renewal=True)`",
    ),
    Library(
        "pottery",
        "pottery Redlock, 1 master",
        "pottery",
        "contend.adapters.pottery:factory",
        configuration="`Redlock(key=name, masters={client}, auto_release_time=ttl)`",
    ),
    Library(
        "pottery-3",
        "pottery Redlock, 3 masters",
        "pottery",
        "contend.adapters.pottery:three_masters",
        masters=3,
        configuration="`Redlock(key=name, masters={three servers}, auto_release_time=ttl)`",
    ),
    Library(
        "sherlock",
        "sherlock RedisLock",
        "sherlock",
        "contend.adapters.sherlock:factory",
        configuration="`RedisLock(name, client=client, expire=ttl)`, whole seconds",
    ),
    Library(
        "sherlock-no-expiry",
        "sherlock RedisLock, expire=None",
        "sherlock",
        "contend.adapters.sherlock:never_expire_factory",
        claims=frozenset({MUTUAL_EXCLUSION, SAFE_RELEASE}),
        configuration='`RedisLock(name, client=client, expire=None)`: the README\'s "never expire locks"',
    ),
)


def by_key(keys: Sequence[str]) -> list[Library]:
    """The rows `keys` name (all when empty), in scoreboard order; ContendError for an unknown one."""
    known = {lib.key: lib for lib in LIBRARIES}
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise ContendError(f"--lib {unknown[0]!r} is not on the scoreboard; choose from {', '.join(known)}")
    wanted = set(keys)
    return [lib for lib in LIBRARIES if not wanted or lib.key in wanted]
