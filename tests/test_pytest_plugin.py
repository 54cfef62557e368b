"""The pytest fixtures contend installs: a server, clients, namespaces, and the controlled scheduler."""

from __future__ import annotations

from contend.impl.registry import NaiveRegistry
from contend.schedule import ReplayChooser, Status


def test_contend_namespace_is_empty_and_cleaned(contend_namespace, contend_client):
    contend_client.set(contend_namespace.key("x"), 1)
    assert contend_namespace.count() == 1


def test_contend_scheduler_interleaves_clients_as_told(contend_scheduler, contend_target, contend_namespace):
    conns = [contend_target.client() for _ in range(2)]
    try:
        for conn in conns:
            conn.ping()
            contend_scheduler.add_client(connection=conn)
        registries = [NaiveRegistry(conn, contend_namespace.prefix) for conn in conns]
        for i, registry in enumerate(registries):
            contend_scheduler.start(i, lambda r=registry: r.register("a"), "register('a')")
        # c0 HGET, c1 HGET, c0 INCR, c0 HSETNX, c1 INCR, c1 HSETNX: the naive registry's race.
        contend_scheduler.run_all(ReplayChooser([0, 1, 0, 0, 1, 1, 0]))
        errors = [c.outcome.error for c in contend_scheduler.clients if c.outcome.error]
        assert len(errors) == 1 and "Failed to register" in str(errors[0])
        assert all(c.status is Status.IDLE for c in contend_scheduler.clients)
    finally:
        for conn in conns:
            conn.close()
