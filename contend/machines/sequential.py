"""The sequential specification of a user's own primitive (`--kind operations`), as a model the
linearizability search (contend.history.checker, the WGL search) can step.

Without a model the specification is the implementation itself, run one operation at a time on
a fresh namespace (as Lincheck does): the result of an operation after an order of earlier ones
is what the implementation returns when those operations, then this one, run alone, each on an
object the factory makes anew, on an empty namespace. A state is that order; two orders that
leave the same keys, values and TTLs in the namespace are one state to the search (the
primitive's state lives in Redis: contend makes a fresh object for every operation, in the
concurrent run too). With a model, a small class with the same methods, a state is an instance
of it, copied before each step.

Results are compared by value: what an operation returned (bytes as the text they decode to,
tuples as lists), or the name of the exception type it raised.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import redis

from contend.history.verdict import PartitionResult
from contend.models.base import UNKNOWN, Op, freeze, single_partition
from contend.servers.keyspace import Namespace

#: Where the re-run specification's fresh namespace lives, under the example's.
SPEC_CHILD = "contend-sequential-spec"


class Outcome:
    """What one operation did: returned `value`, or raised an exception of type `raised`."""

    __slots__ = ("raised", "value")

    def __init__(self, value: Any = None, raised: str | None = None) -> None:
        self.value = normalise(value) if raised is None else None
        self.raised = raised

    @classmethod
    def of(cls, call: Callable[[], Any]) -> Outcome:
        """Run `call`; its outcome (an exception it raised is an outcome too)."""
        try:
            return cls(call())
        except Exception as exc:
            return cls(raised=type(exc).__name__)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Outcome) and (self.raised, self.value) == (other.raised, other.value)

    def __hash__(self) -> int:
        return hash((self.raised, repr(self.value)))

    def __repr__(self) -> str:
        return f"raised {self.raised}" if self.raised else repr(self.value)


def normalise(value: Any) -> Any:
    """Bytes as the text they decode to, tuples as lists, recursively (results compared by value)."""
    if isinstance(value, bytes):
        try:
            return value.decode()
        except UnicodeDecodeError:
            return value
    if isinstance(value, list | tuple):
        return [normalise(v) for v in value]
    if isinstance(value, dict):
        return {normalise(k) if isinstance(k, bytes) else k: normalise(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        return {normalise(v) for v in value}
    return value


class State:
    """A state of a specification: `payload` (an order of operations, or a model instance),
    compared and hashed by `fingerprint` (what decides every later result)."""

    __slots__ = ("_hash", "fingerprint", "payload")

    def __init__(self, fingerprint: Any, payload: Any) -> None:
        self.fingerprint = fingerprint
        self.payload = payload
        self._hash = hash(fingerprint)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, State) and self.fingerprint == other.fingerprint

    def __hash__(self) -> int:
        return self._hash


class ReRunSpec:
    """The implementation as its own specification: `factory(client, namespace)` run one operation
    at a time on a namespace of its own under `base` (the admin client's, outside the schedule).

    A state is what the namespace holds after an order of operations run alone, each on a fresh
    object: its keys, their values (DUMP) and TTLs. Stepping a state puts exactly that back
    (RESTORE, unless the namespace holds it already: the search mostly goes one step deeper),
    runs the operation on a fresh object, and reads what the namespace holds then.
    """

    name = "the implementation run one operation at a time on a fresh namespace"

    def __init__(
        self,
        factory: Callable[..., Any],
        client: redis.Redis,
        base: str,
        *,
        async_client: Callable[[], Any] | None = None,
    ) -> None:
        self.factory = factory
        self.space = Namespace(client, f"{base}:{SPEC_CHILD}")
        #: For code for redis.asyncio: makes the client its operations run on, on a loop of the
        #: specification's own (both made at the first call, closed by `close`).
        self._async_client = async_client
        self._loop: asyncio.AbstractEventLoop | None = None
        self._aclient: Any = None
        self._steps: dict[tuple[Any, str, Any], tuple[Outcome, Snapshot]] = {}
        self._holds: Snapshot | None = None  # what the namespace holds now (None: not known)
        #: Operations run for the specification.
        self.runs = 0

    @property
    def client(self) -> redis.Redis:
        """The connection it runs on (outside the schedule); a machine hands it its own."""
        return self.space.client

    @client.setter
    def client(self, client: redis.Redis) -> None:
        self.space.client = client

    def initial(self) -> State:
        return State((), ())

    def run(self, state: State, name: str, args: tuple[Any, ...]) -> tuple[Outcome, State]:
        memo = (state.fingerprint, name, freeze(args))
        found = self._steps.get(memo)
        if found is None:
            found = self._step(state.fingerprint, name, args)
            self._steps[memo] = found
        outcome, after = found
        return outcome, State(after, (*state.payload, (name, args)))

    def replay(self, order: Sequence[tuple[str, tuple[Any, ...]]]) -> list[Outcome]:
        """Every outcome of `order` run alone from an empty namespace (each on a fresh object)."""
        self._put(())
        outcomes = [self._call(name, args) for name, args in order]
        self._holds = None
        return outcomes

    def close(self) -> None:
        """Empty its namespace, and close an async client and its loop (what it ran stays
        remembered)."""
        self.space.cleanup()
        self._holds = None
        loop, self._loop = self._loop, None
        if loop is not None:
            try:
                loop.run_until_complete(self._aclient.aclose())
            finally:
                loop.close()

    def _step(self, before: Snapshot, name: str, args: tuple[Any, ...]) -> tuple[Outcome, Snapshot]:
        self._put(before)
        self.runs += 1
        outcome = self._call(name, args)
        self._holds = self._snapshot()
        return outcome, self._holds

    def _put(self, snapshot: Snapshot) -> None:
        """Make the namespace hold exactly `snapshot`."""
        if self._holds == snapshot:
            return
        self.space.cleanup()
        if snapshot:
            with self.client.pipeline(transaction=False) as pipe:
                for key, value, pttl in snapshot:
                    pipe.restore(key, max(pttl, 0), value, replace=True)
                pipe.execute()
        self._holds = snapshot

    def _call(self, name: str, args: tuple[Any, ...]) -> Outcome:
        if self._async_client is not None:
            return Outcome.of(lambda: self._call_async(name, args))
        return Outcome.of(lambda: getattr(self.factory(self.client, self.space.prefix), name)(*args))

    def _call_async(self, name: str, args: tuple[Any, ...]) -> Any:
        """The operation of an object made on the async client, run to its end on the loop."""
        if self._loop is None:
            assert self._async_client is not None
            self._loop = asyncio.new_event_loop()
            self._aclient = self._async_client()

        async def once() -> Any:
            result = getattr(self.factory(self._aclient, self.space.prefix), name)(*args)
            return await result if inspect.isawaitable(result) else result

        return self._loop.run_until_complete(once())

    def _snapshot(self) -> Snapshot:
        """The namespace's keys, their values (DUMP) and TTLs (ms; -1: none), in key order."""
        keys = sorted(key for _, key in self.space.keys())  # noqa: SIM118 (a Namespace, not a dict)
        if not keys:
            return ()
        with self.client.pipeline(transaction=False) as pipe:
            for key in keys:
                pipe.dump(key)
                pipe.pttl(key)
            replies = pipe.execute()
        return tuple(
            (key, replies[2 * k], replies[2 * k + 1])
            for k, key in enumerate(keys)
            if replies[2 * k] is not None and replies[2 * k + 1] != -2
        )

    def describe(self, state: State) -> str:
        return " → ".join(f"{n}{_args_text(a)}" for n, a in state.payload) or "(nothing run)"


#: What a namespace holds: (key, DUMP, PTTL) in key order.
Snapshot = tuple[tuple[bytes, bytes, int], ...]


class ModelSpec:
    """The user's model: a class with one method per operation, its instance the state."""

    def __init__(self, model: type) -> None:
        self.model = model
        self.name = f"the model {model.__name__}"

    def initial(self) -> State:
        instance = self.model()
        return State(_model_fingerprint(instance), instance)

    def run(self, state: State, name: str, args: tuple[Any, ...]) -> tuple[Outcome, State]:
        instance = copy.deepcopy(state.payload)
        outcome = Outcome.of(lambda: getattr(instance, name)(*args))
        return outcome, State(_model_fingerprint(instance), instance)

    def describe(self, state: State) -> str:
        return repr(vars(state.payload)) if hasattr(state.payload, "__dict__") else repr(state.payload)


Spec = ReRunSpec | ModelSpec


class SpecModel:
    """A specification as a contend.models model (init, step, partition, describe_state): an
    operation's recorded output must equal what the specification gives; UNKNOWN fits anything
    (its reply was lost or its client crashed: it may have taken effect, or not)."""

    def __init__(self, spec: Spec) -> None:
        self.spec = spec
        self.name = spec.name

    def init(self) -> State:
        return self.spec.initial()

    def step(self, state: State, op: Op) -> tuple[bool, State]:
        outcome, nxt = self.spec.run(state, op.f, op.value)
        return (op.output is UNKNOWN or op.output == outcome), nxt

    def partition(self, ops: Sequence[Op]) -> list[list[Op]]:
        return single_partition(ops)

    def describe_state(self, state: State) -> str:
        return self.spec.describe(state)


def expected_after(spec: Spec, result: PartitionResult) -> Outcome | None:
    """What the specification gives the culprit after the longest order the search fitted."""
    if result.culprit is None:
        return None
    state = spec.initial()
    for call in result.linearization:
        _, state = spec.run(state, call.f, call.value)
    outcome, _ = spec.run(state, result.culprit.f, result.culprit.value)
    return outcome


def _model_fingerprint(instance: Any) -> Any:
    fields = vars(instance) if hasattr(instance, "__dict__") else instance
    frozen = freeze(fields)
    try:
        hash(frozen)
    except TypeError:
        return repr(frozen)
    return frozen


def _args_text(args: Any) -> str:
    return "(" + ", ".join(repr(a) for a in args) + ")"
