"""The registry machine: clients register and look up a few names while Hypothesis interleaves them.

Properties, checked after every step:

* no spurious errors: registering or looking up never raises;
* stable ids: every registration of a name returns the same id, and so does a lookup once it is registered;
* unique ids: distinct names never share an id.

And whenever no operation is in flight:

* gap-free: the ids handed out are exactly 1..n for n names;
* tables agree: reverse(id) gives back the name, count() == n.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.impl.catalog import GAP_FREE, NO_SPURIOUS_ERRORS, STABLE_IDS, TABLES_AGREE, UNIQUE_IDS
from contend.machines.base import ScheduledMachine
from contend.target.target import Target

NAMES = ("a", "b", "c")


class RegistryMachine(ScheduledMachine):
    """Subclass per implementation with `factory` (and `dbs` for the seed layout) set."""

    factory: Any = None

    def __init__(self, target: Target) -> None:
        self.ids: dict[str, int] = {}  # name -> the id every completed registration returned
        self.registries: list[Any] = []
        super().__init__(target)

    def setup_clients(self) -> None:
        self.registries = [type(self).factory(conn, self.ns.prefix) for conn in self.connections]

    @precondition(lambda self: bool(self.idle_clients()))
    @rule(client=st.integers(0, 3), name=st.sampled_from(NAMES), lookup=st.booleans())
    def begin(self, client: int, name: str, lookup: bool) -> None:
        idle = self.idle_clients()
        index = idle[client % len(idle)]  # drawn apart from the state, so examples shrink well
        registry = self.registries[index]
        if lookup:
            self.start(index, lambda: registry.lookup(name), f"lookup({name!r})")
        else:
            self.start(index, lambda: registry.register(name), f"register({name!r})")

    def completed(self, index: int) -> None:
        client = self.scheduler.clients[index]
        label, outcome = client.operation, client.outcome
        if outcome.error is not None:
            self.fail(
                NO_SPURIOUS_ERRORS,
                f"{client.name} {label} raised {type(outcome.error).__name__}: {outcome.error}",
            )
        name = label.split("'")[1]
        got = outcome.value
        if label.startswith("lookup"):
            if name in self.ids and got != self.ids[name]:
                self.fail(
                    STABLE_IDS,
                    f"{client.name} {label} = {got}, but {name!r} was registered as {self.ids[name]}",
                )
            return
        if name in self.ids and got != self.ids[name]:
            self.fail(
                STABLE_IDS,
                f"{client.name} {label} = {got}, but an earlier registration returned {self.ids[name]}",
            )
        for other, ident in self.ids.items():
            if other != name and ident == got:
                self.fail(UNIQUE_IDS, f"{client.name} {label} = {got}, the id of {other!r} too")
        self.ids[name] = got

    def check_quiescent(self) -> None:
        reader = self.registries[0]
        for name in NAMES:  # a crashed client's registration may or may not have taken effect
            if name not in self.ids and (ident := reader.lookup(name)) is not None:
                self.ids[name] = ident
        n = len(self.ids)
        if sorted(self.ids.values()) != list(range(1, n + 1)):
            self.fail(GAP_FREE, f"{n} names got ids {sorted(self.ids.values())}, not 1..{n}")
        for name, ident in self.ids.items():
            if (back := reader.reverse(ident)) != name:
                self.fail(
                    TABLES_AGREE, f"reverse({ident}) = {back!r}, but {name!r} was registered as {ident}"
                )
        if (count := reader.count()) != n:
            self.fail(TABLES_AGREE, f"count() = {count} with {n} names registered")


def machine_for(factory: Any, *, dbs: tuple[int, ...] = (), name: str = "") -> type[RegistryMachine]:
    """A RegistryMachine subclass bound to one implementation's factory."""
    return type(
        f"RegistryMachine_{name or getattr(factory, '__name__', 'impl')}",
        (RegistryMachine,),
        {"factory": staticmethod(factory), "dbs": dbs},
    )
