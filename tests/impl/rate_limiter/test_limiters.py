"""The catalog's rate limiters on a real server: the protocol, windows running out on the virtual
clock, bad input, and each known-bad one's defect forced by the scheduler (never waited for)."""

from __future__ import annotations

import pytest

from contend.impl.catalog import by_name, family
from contend.schedule import Scheduler

LIMITERS = [pytest.param(i, id=i.name) for i in family("rate_limiter")]
CORRECT = [pytest.param(i, id=i.name) for i in family("rate_limiter") if not i.known_bad]
WINDOW_MS = 1_000


def alone(s, index, operation, label="hit"):
    """Run one operation on client `index` to its end, every other client paused; its outcome."""
    s.start(index, operation, label)
    while index in s.runnable():
        s.step(index)
    return s.clients[index].outcome


@pytest.fixture
def scheduled(contend_target):
    """A scheduler on the server's clock with three clients: (scheduler, connections)."""
    conns = [contend_target.client() for _ in range(3)]
    for c in conns:
        c.ping()
    with Scheduler(clock=contend_target.clock) as s:
        for c in conns:
            s.add_client(connection=c)
        yield s, conns
    for c in conns:
        c.close()


@pytest.mark.parametrize("impl", LIMITERS)
def test_every_limiter_follows_the_protocol(impl, client, ns):
    limiter = impl.factory(client, ns.key("rl"), 3, 60_000)
    assert limiter.remaining() == 3
    assert [limiter.hit() for _ in range(4)] == [True, True, True, False]
    assert limiter.remaining() == 0
    other = impl.factory(client, ns.key("other"), 3, 60_000)
    assert other.hit(4) is False  # above the limit: never admitted (it may count, as refused hits may)
    assert impl.factory(client, ns.key("third"), 3, 60_000).hit(3) is True
    assert all(client.pttl(key) > 0 for _, key in ns.keys())  # noqa: SIM118 (a Namespace, not a dict)


@pytest.mark.parametrize("impl", LIMITERS)
def test_bad_input_is_refused_before_anything_is_written(impl, client, ns):
    for key, limit, window in [("k", 0, 1000), ("k", -1, 1000), ("k", 2, 0), ("k", 2, -5), ("", 2, 1000)]:
        with pytest.raises(ValueError):
            impl.factory(client, ns.key(key) if key else "", limit, window)
    limiter = impl.factory(client, ns.key("k"), 2, 1000)
    with pytest.raises(ValueError):
        limiter.hit(0)
    assert ns.count() == 0


@pytest.mark.parametrize("impl", CORRECT)
def test_a_correct_limiter_has_room_again_once_the_window_passed(impl, scheduled, ns):
    s, conns = scheduled
    limiter = impl.factory(conns[0], ns.key("rl"), 2, WINDOW_MS)
    assert [alone(s, 0, limiter.hit).value for _ in range(3)] == [True, True, False]
    s.advance(0.2)  # a bucket has 0.4 of a token back, a window is still on
    assert alone(s, 0, limiter.hit).value is False
    s.advance(0.9)
    assert alone(s, 0, limiter.hit).value is True


@pytest.mark.parametrize("impl", CORRECT)
def test_a_correct_limiter_admits_the_limit_whatever_the_interleaving(impl, scheduled, ns):
    s, conns = scheduled
    limiters = [impl.factory(c, ns.key("rl"), 1, WINDOW_MS) for c in conns[:2]]
    for i, limiter in enumerate(limiters):
        s.start(i, limiter.hit, "hit")
    while s.runnable():
        s.step(s.runnable()[-1])
    assert sorted(c.outcome.value for c in s.clients[:2]) == [False, True]


def interleave(s, limiters, order):
    """Start hit() on each client, take round trips in `order`, then finish; the outcomes."""
    for i, limiter in enumerate(limiters):
        s.start(i, limiter.hit, "hit")
    for index in order:
        s.step(index)
    while s.runnable():
        s.step(s.runnable()[0])
    return [s.clients[i].outcome.value for i in range(len(limiters))]


def test_incr_then_expire_leaves_a_counter_without_expiry_when_its_client_dies(scheduled, ns):
    s, conns = scheduled
    limiter = by_name("incr_then_expire").factory(conns[0], ns.key("rl"), 2, WINDOW_MS)
    s.start(0, limiter.hit, "hit")
    s.step(0)  # INCRBY
    s.crash(0)
    assert conns[1].pttl(ns.key("rl")) == -1


def test_get_then_incr_admits_two_that_read_the_same_count(scheduled, ns):
    s, conns = scheduled
    limiters = [by_name("get_then_incr").factory(c, ns.key("rl"), 1, WINDOW_MS) for c in conns[:2]]
    assert interleave(s, limiters, [0, 1]) == [True, True]  # both GET 0


def test_separate_count_log_admits_two_that_counted_the_same_log(scheduled, ns):
    s, conns = scheduled
    limiters = [by_name("separate_count_log").factory(c, ns.key("rl"), 1, WINDOW_MS) for c in conns[:2]]
    assert interleave(s, limiters, [0, 1, 0, 1]) == [True, True]  # TIME, TIME, count, count


def test_unwatched_bucket_spends_one_token_twice(scheduled, ns):
    s, conns = scheduled
    limiters = [by_name("unwatched_bucket").factory(c, ns.key("rl"), 1, WINDOW_MS) for c in conns[:2]]
    assert interleave(s, limiters, [0, 1]) == [True, True]  # both read a full bucket


def test_client_clock_window_counts_a_skewed_client_in_another_window(scheduled, ns):
    s, conns = scheduled
    limiters = [by_name("client_clock_window").factory(c, ns.key("rl"), 1, WINDOW_MS) for c in conns[:2]]
    s.skew(1, WINDOW_MS / 1000)
    assert interleave(s, limiters, []) == [True, True]
    fixed = [by_name("fixed_window").factory(c, ns.key("fixed"), 1, WINDOW_MS) for c in conns[:2]]
    assert interleave(s, fixed, []) == [True, False]  # the server's window knows no skew
