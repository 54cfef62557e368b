"""The single-database layout: three keys under the run namespace, one hash tag.

    <namespace>:{<registry>}:counter   string, the highest id handed out
    <namespace>:{<registry>}:ids       hash   name -> id
    <namespace>:{<registry>}:names     hash   id -> name
    <namespace>:{<registry>}:lock      string, taken by the lock-first strategy

The braces make Redis Cluster hash only `<registry>`, so all of one registry's
keys share a slot and MULTI/EXEC and scripts over them stay legal there.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RegistryKeys:
    """Key names of one registry."""

    namespace: str
    registry: str = "registry"

    def _key(self, part: str) -> str:
        prefix = f"{self.namespace}:" if self.namespace else ""
        return f"{prefix}{{{self.registry}}}:{part}"

    @property
    def counter(self) -> str:
        return self._key("counter")

    @property
    def ids(self) -> str:
        return self._key("ids")

    @property
    def names(self) -> str:
        return self._key("names")

    @property
    def lock(self) -> str:
        return self._key("lock")
