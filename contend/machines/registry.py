"""The registry machine: clients register, look up and reverse a few names while Hypothesis interleaves them.

Every client asks about names other clients registered, before and after
they did, so a cache that remembers "not found" is caught. Properties, each
checked when an operation completes:

* no-spurious-errors: registering or looking up never raises (but for an operation that
  lost a reply: it may raise, and may or may not have registered);
* stable-ids: every registration of a name returns the same id, a lookup
  returns it too, and a lookup that starts after a registration of the name
  completed does not answer None;
* unique-ids: distinct names never share an id;
* tables-agree: reverse(id) names the name registered under it, and does not
  answer None once that registration completed before it started.

And whenever no operation is in flight:

* gap-free: the ids handed out are exactly 1..n for n names;
* tables-agree: reverse(id) gives back the name, count() == n.
"""

from __future__ import annotations

import asyncio
from typing import Any, ClassVar

from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from contend.impl.catalog import GAP_FREE, NO_SPURIOUS_ERRORS, STABLE_IDS, TABLES_AGREE, UNIQUE_IDS
from contend.machines.base import ScheduledMachine
from contend.servers.target import Target

NAMES = ("a", "b", "c")


class RegistryMachine(ScheduledMachine):
    """Subclass per implementation with `factory` (and `dbs` for the seed layout) set."""

    factory: Any = None
    essential_rules = frozenset({"begin", "advance"})
    situations: ClassVar[dict[str, str]] = {
        STABLE_IDS: "a registration or lookup of a name while another client's registration of it was under way",
        UNIQUE_IDS: "registrations of two names under way together",
    }

    def __init__(self, target: Target, **kwargs: Any) -> None:
        self.ids: dict[str, int] = {}  # name -> the id every completed registration returned
        self.registered_at: dict[str, int] = {}  # name -> trace position its first registration completed
        self.started_step: dict[int, int] = {}  # client -> trace position its operation started
        self.registries: list[Any] = []
        super().__init__(target, **kwargs)

    def setup_clients(self) -> None:
        self.registries = [type(self).factory(conn, self.ns.prefix) for conn in self.connections]

    @precondition(lambda self: bool(self.idle_clients()))
    @rule(
        client=st.integers(0, 3), name=st.sampled_from(NAMES), read=st.sampled_from(["", "lookup", "reverse"])
    )
    def begin(self, client: int, name: str, read: str) -> None:
        """A client registers `name`, looks it up, or reverses the id it has (or would get: its
        position among the names)."""
        idle = self.idle_clients()
        index = idle[client % len(idle)]  # drawn apart from the state, so examples shrink well
        registry = self.registries[index]
        self.started_step[index] = len(self.scheduler.trace)
        registering = [
            label for i, label in self.in_flight.items() if i != index and label.startswith("register(")
        ]
        if read != "reverse" and f"register({name!r})" in registering:
            self.met[STABLE_IDS] += 1
        if not read and any(label != f"register({name!r})" for label in registering):
            self.met[UNIQUE_IDS] += 1
        if read == "lookup":
            self.start(index, lambda: registry.lookup(name), f"lookup({name!r})")
        elif read == "reverse":
            ident = self.ids.get(name, NAMES.index(name) + 1)
            self.start(index, lambda: registry.reverse(ident), f"reverse({ident})")
        else:
            self.start(index, lambda: registry.register(name), f"register({name!r})")

    def completed(self, index: int) -> None:
        client = self.scheduler.clients[index]
        label, outcome = client.operation, client.outcome
        if not label.startswith(("register(", "lookup(", "reverse(")):
            return  # the harness's own step (an async client's loop finishing its background tasks)
        cancelled = self.asynchronous and isinstance(outcome.error, asyncio.CancelledError)
        if cancelled or self.indeterminate(index):
            # Cancelled (contend.machines.cancelling), or it raised after a reply was lost: like a
            # crash, its effect is unknown; what it left is judged when nothing is in flight (ids
            # 1..n, tables that agree).
            self.started_step.pop(index, None)
            return
        if outcome.error is not None:
            self.fail(
                NO_SPURIOUS_ERRORS,
                f"{client.name} {label} raised {type(outcome.error).__name__}: {outcome.error}",
            )
        began = self.started_step.pop(index, 0)
        got = outcome.value
        if label.startswith("reverse"):
            self.check_reverse(client.name, label, int(label[len("reverse(") : -1]), got, began)
            return
        name = label.split("'")[1]
        if label.startswith("lookup"):
            if got is None:
                if name in self.registered_at and self.registered_at[name] < began:
                    self.fail(
                        STABLE_IDS,
                        f"{client.name} {label} = None, but {name!r} was registered as {self.ids[name]} "
                        "before this lookup began",
                    )
                return
            if name in self.ids and got != self.ids[name]:
                self.fail(
                    STABLE_IDS,
                    f"{client.name} {label} = {got}, but {name!r} was registered as {self.ids[name]}",
                )
            self.learn(client.name, label, name, got)
            return
        if name in self.ids and got != self.ids[name]:
            self.fail(
                STABLE_IDS,
                f"{client.name} {label} = {got}, but an earlier registration returned {self.ids[name]}",
            )
        self.learn(client.name, label, name, got)
        self.registered_at.setdefault(name, len(self.scheduler.trace))

    def learn(self, who: str, label: str, name: str, ident: Any) -> None:
        """`ident` is `name`'s id (a registration or lookup said so): distinct names, distinct ids."""
        for other, known in self.ids.items():
            if other != name and known == ident:
                self.fail(UNIQUE_IDS, f"{who} {label} = {ident}, the id of {other!r} too")
        self.ids[name] = ident

    def check_reverse(self, who: str, label: str, ident: int, got: Any, began: int) -> None:
        owner = next((n for n, i in self.ids.items() if i == ident), None)
        if got is None:
            if owner is not None and self.registered_at.get(owner, began) < began:
                self.fail(
                    TABLES_AGREE,
                    f"{who} {label} = None, but {owner!r} was registered as {ident} before it began",
                )
            return
        text = got.decode() if isinstance(got, bytes) else got
        if owner is not None and text != owner:
            self.fail(TABLES_AGREE, f"{who} {label} = {text!r}, but {owner!r} was registered as {ident}")
        if text in self.ids and self.ids[text] != ident:
            self.fail(TABLES_AGREE, f"{who} {label} = {text!r}, but {text!r} has id {self.ids[text]}")

    def check_quiescent(self) -> None:
        reader = self.harness_object(lambda conn: type(self).factory(conn, self.ns.prefix))
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
    label = "".join(c if c.isalnum() else "_" for c in (name or getattr(factory, "__name__", "impl")))
    return type(
        f"RegistryMachine_{label}",
        (RegistryMachine,),
        {"factory": staticmethod(factory), "dbs": dbs},
    )
