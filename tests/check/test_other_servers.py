"""Code under test that reaches a server the run does not include (a lock that opens its own
client to another server) stops the run with exit 2, naming the server and the command, which
is not sent; no verdict. A server the target lists is part of the run."""

from __future__ import annotations

import pytest

from contend.cli import main
from contend.servers.server import EmbeddedRedis
from contend.servers.target import Target
from contend.testing import check_lock

SPEC = ("--impl", "tests.fixtures.side_server_lock:make", "--kind", "lock")


@pytest.fixture(scope="module")
def side_server():
    with EmbeddedRedis() as server:
        yield server


def test_a_lock_with_a_server_of_its_own_stops_the_run_naming_it(
    capsys, monkeypatch, contend_target, side_server
):
    monkeypatch.setenv("SIDE_LOCK_URL", side_server.url)
    assert main(["check", "--redis-url", contend_target.url, *SPEC]) == 2
    out, err = capsys.readouterr()
    address = side_server.url.split("//")[1].rsplit("/", 1)[0]
    assert err.count("\n") == 1 and "Traceback" not in err, "one line"
    assert "tried to send SET contend:" in err and f" to {address}, a server this run does not include" in err
    assert "--masters" in err and "--redis-url" in err
    assert "verdict" not in out and "pass" not in out, "no verdict on such a run"
    assert side_server.client().dbsize() == 0, "nothing reached it"


def test_the_same_lock_runs_when_the_target_lists_its_server(monkeypatch, contend_target, side_server):
    monkeypatch.setenv("SIDE_LOCK_URL", side_server.url)
    target = Target(contend_target.url, contend_target.description, also=(side_server.url,))
    rows = check_lock(SPEC[1], target, checks=["schedule"], schedule_examples=10)
    assert [r.status for r in rows[0].results] == ["pass"]
    assert side_server.client().dbsize() == 0, "its keys there were cleaned up with the namespace"
