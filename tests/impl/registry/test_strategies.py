"""Behaviour of the registry strategies beyond the seed's tests."""

from __future__ import annotations

import pytest
import redis

from contend.impl.catalog import family
from contend.impl.connection import client_for_db
from contend.impl.registry import (
    MAX_NAME_BYTES,
    LuaRegistry,
    Registerer,
    RegistrationError,
    RetriesExhausted,
    WatchRegistry,
)
from tests.impl.registry.helpers import build

REGISTRIES = [pytest.param(i, id=i.name) for i in family("registry")]
BAD_NAMES = ["", b"", 42, None, 1.5, ["a"], "x" * (MAX_NAME_BYTES + 1), b"\xff\xfe"]


@pytest.mark.parametrize("impl", REGISTRIES)
@pytest.mark.parametrize("bad", BAD_NAMES, ids=repr)
def test_bad_names_raise_value_error_and_write_nothing(impl, bad, client, ns):
    reg = build(impl, client, ns)
    with pytest.raises(ValueError) as info:
        reg.register(bad)
    assert str(info.value), "the error must say what was wrong"
    with pytest.raises(ValueError):
        reg.register_many(["fine", bad])
    assert ns.count() == 0


@pytest.mark.parametrize("impl", REGISTRIES)
def test_register_many_keeps_order_and_duplicates(impl, client, ns):
    reg = build(impl, client, ns)
    assert reg.register("b") == 1
    assert reg.register_many(["a", "b", "c", "a"]) == [2, 1, 3, 2]
    assert reg.register_many([]) == []
    assert reg.count() == 3
    assert [reg.reverse(i) for i in (1, 2, 3, 4)] == ["b", "a", "c", None]


def test_register_many_string_is_refused(client, ns):
    with pytest.raises(ValueError, match="list of names"):
        LuaRegistry(client, ns.prefix).register_many("abc")


def test_name_at_the_maximum_length_is_accepted(client, ns):
    reg = LuaRegistry(client, ns.prefix)
    assert reg.register("é" * (MAX_NAME_BYTES // 2)) == 1


def test_bytes_and_str_names_are_the_same_name(client, ns):
    reg = LuaRegistry(client, ns.prefix)
    assert reg.register("名前") == reg.register("名前".encode()) == 1
    assert reg.reverse(1) == "名前"


@pytest.fixture
def round_trips(monkeypatch):
    """Counts writes to Redis connections: one per command, one per pipeline."""
    counter = {"n": 0}
    real = redis.connection.Connection.send_packed_command

    def counting(self, command, check_health=True):
        counter["n"] += 1
        return real(self, command, check_health)

    monkeypatch.setattr(redis.connection.Connection, "send_packed_command", counting)
    return counter


@pytest.mark.parametrize("impl", [i for i in REGISTRIES if i.id in ("watch", "lock_first", "lua")])
def test_register_many_is_batched(impl, client, ns, round_trips):
    reg = build(impl, client, ns)
    ids = reg.register_many([f"name-{i}" for i in range(5000)])
    assert ids == list(range(1, 5001))
    assert round_trips["n"] < 20, "a per-name loop would take thousands of round trips"


def test_watch_gives_up_with_a_clear_error(contend_target, client, ns):
    """Another client changes the counter inside every attempt: retries run out."""
    meddler = contend_target.client()
    reg = WatchRegistry(client, ns.prefix, max_retries=3, backoff_base=0.0001)
    real_pipeline = client.pipeline

    def pipeline_that_loses(*args, **kwargs):
        pipe = real_pipeline(*args, **kwargs)
        real_get = pipe.get

        def get(key):
            value = real_get(key)
            meddler.incr(reg.keys.counter)  # lands between WATCH and EXEC
            return value

        pipe.get = get
        return pipe

    client.pipeline = pipeline_that_loses
    try:
        with pytest.raises(RetriesExhausted, match=r"after 3 attempts.*use the lua strategy"):
            reg.register("contested")
    finally:
        client.pipeline = real_pipeline
        meddler.close()
    assert reg.conflicts == 3
    assert reg.lookup("contested") is None


def test_watch_rejects_zero_retries(client, ns):
    with pytest.raises(ValueError, match="max_retries"):
        WatchRegistry(client, ns.prefix, max_retries=0)


def test_lua_reloads_after_script_flush(contend_private_server):
    client = contend_private_server.client()
    reg = LuaRegistry(client, "t")
    assert reg.register("a") == 1
    client.script_flush()
    assert reg.register("b") == 2
    assert reg.register_many(["c", "a"]) == [3, 1]
    client.close()


def test_seed_layout_uses_three_databases(contend_target, client, ns):
    reg = Registerer("count", 15, 14, 13, prefix=ns.prefix + ":", client=client)
    assert reg.register("alice") == 1
    assert reg.register("bob") == 2
    kinds = {}
    for db in (13, 14, 15):
        c = client_for_db(client, db)
        kinds[db] = sorted(k.decode() for k in c.keys(ns.prefix + ":*"))
        c.close()
    p = ns.prefix + ":"
    assert kinds == {15: [p + "count"], 14: [p + "alice", p + "bob"], 13: [p + "1", p + "2"]}
    assert reg.count() == 2 and reg.lookup("bob") == 2 and reg.reverse(1) == "alice"
    reg.close()


def test_seed_layout_refuses_unknown_and_watch_strategies(client):
    with pytest.raises(ValueError, match="unknown strategy 'optimistic'"):
        Registerer("count", 15, 14, 13, strategy="optimistic", client=client)
    with pytest.raises(ValueError, match="WATCH needs the single-database layout"):
        Registerer("count", 15, 14, 13, strategy="watch", client=client)


def test_seed_layout_without_inverse_table(client, ns):
    reg = Registerer("count", 15, 14, None, prefix=ns.prefix + ":", client=client)
    assert reg.register("a") == 1
    with pytest.raises(RegistrationError, match="db_invert"):
        reg.reverse(1)
    reg.close()


@pytest.mark.parametrize("impl", REGISTRIES)
def test_reverse_rejects_non_int(impl, client, ns):
    reg = build(impl, client, ns)
    with pytest.raises(ValueError, match="an id is an int"):
        reg.reverse("1")
