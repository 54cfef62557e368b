"""A scoreboard row's type: one library in one documented configuration.

A row names the adapter factory (`contend.adapters`), the PyPI distribution whose version it
reports, the pinned requirements its environment is made from (contend.scoreboard.environments),
the family whose battery judges it, and what the library claims, quoted from its own
documentation with the file the words come from. It claims no more than that: a lock that never
expires does not claim crash liveness. A row that cannot run says why (`not_run`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib import metadata
from typing import Any

from contend.errors import ContendError
from contend.subject.claims import LOCK_CLAIMS

#: The family of ID generators (contend.scoreboard.ids): `next()` only, no names.
ID_FAMILY = "id_generator"
INSTALL_HINT = "pip install 'contend[libs]', or run without --environment current"


class LibraryMissing(ContendError):
    """The library a row needs is not installed (or does not import) where the row runs."""


@dataclass(frozen=True)
class Quote:
    """What a library says about itself, and the file of its distribution it says it in."""

    text: str
    source: str


@dataclass(frozen=True)
class Library:
    """One scoreboard row."""

    key: str  # what --lib takes
    title: str  # the library and its configuration, in words
    distribution: str  # on PyPI, for the version
    adapter: str  # module:function in contend.adapters ("" for a row that is not run)
    claims: frozenset[str] = LOCK_CLAIMS
    #: Servers the lock spans (Redlock's masters): the others are embedded servers of their own.
    masters: int = 1
    configuration: str = ""
    #: The battery that judges it: lock, semaphore, registry, single_flight, or ID_FAMILY.
    family: str = "lock"
    #: What its environment installs (pinned); () for redis-py itself, contend's own dependency.
    requirements: tuple[str, ...] = ()
    #: Installed after `requirements` without their dependencies (pinned): a library that caps
    #: redis-py below the range contend drives; `configuration` then says so.
    no_deps: tuple[str, ...] = ()
    #: The library's own words for what it promises.
    quotes: tuple[Quote, ...] = ()
    #: Why the row cannot be judged, when it cannot ("" when it runs).
    not_run: str = ""
    #: Why a check of this row may end inconclusive, which then is no surprise ("": it may not).
    may_be_inconclusive: str = ""

    def version(self) -> str:
        """The installed version where this runs, or LibraryMissing."""
        try:
            return metadata.version(self.distribution)
        except metadata.PackageNotFoundError:
            raise LibraryMissing(
                f"{self.key}: {self.distribution} is not installed ({INSTALL_HINT})"
            ) from None

    def pinned(self) -> str:
        """The version its requirements pin ("" when unpinned or redis-py's own)."""
        for req in (*self.no_deps, *self.requirements):
            name, _, version = req.partition("==")
            if name.split("[")[0].lower() == self.distribution.lower():
                return version
        return ""

    def load(self) -> Callable[..., Any]:
        """The adapter's function (importing the library), or LibraryMissing."""
        module_name, name = self.adapter.split(":")
        try:
            module = importlib.import_module(module_name)
        except ImportError as exc:
            raise LibraryMissing(f"{self.key}: {self.distribution} cannot be imported ({exc})") from None
        made: Callable[..., Any] = getattr(module, name)
        return made

    def adapter_module(self) -> Any:
        """The adapter's module (importing the library), or LibraryMissing."""
        self.load()
        return importlib.import_module(self.adapter.split(":")[0])

    def factory(self, other_urls: Sequence[str] = ()) -> Callable[..., Any]:
        """The protocol factory (for several masters: built over `other_urls`, the servers
        besides the client's), or LibraryMissing."""
        made = self.load()
        return made(list(other_urls)) if self.masters > 1 else made
