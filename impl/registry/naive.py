"""KNOWN-BAD: the seed's register_naive. Check, then act, in separate round trips.

GET the name; if absent, INCR the counter, then SETNX the name and the id.
Two clients registering one name both see it absent, both INCR, and the
loser's HSETNX fails: it raises "Failed to register" and the counter has a gap.
"""

from __future__ import annotations

from typing import Any

from contend.impl.registry.base import RegistrationError, Registry, check_name


class NaiveRegistry(Registry):
    strategy = "naive"

    def register(self, name: str) -> int:
        name = check_name(name)
        index: Any = self.client.hget(self.keys.ids, name)
        if index is None:
            index = self.client.incr(self.keys.counter)
            if not self.client.hsetnx(self.keys.ids, name, index):
                raise RegistrationError(
                    f"Failed to register: key={self.keys.ids}, name={name}, value={index}"
                )
            if not self.client.hsetnx(self.keys.names, index, name):
                raise RegistrationError(f"Failed to register: key={self.keys.names}, id={index}, name={name}")
        return int(index)
