"""One command, one round trip, on a connection from the client's pool: no automatic retry.

redis-py's command layer resends a command after a connection error or
timeout. For a lock command the resend answers the wrong question: `SET NX`
resent after a lost reply finds our own token and reports the lock taken by
someone else; a compare-and-delete resent after a lost reply finds the key
gone and reports the lease lost. Here such an error reaches the caller, who
then knows the outcome is unknown (Jepsen's `info`). Going straight to a
pooled connection also skips about half of redis-py 8's per-command overhead
(retry wrapper, observability hooks), which matters for a lock taken, or a
name registered, on every request.

Clients this does not understand (cluster clients, single-connection clients,
client-side caching) fall back to `execute_command`, retries and all.
"""

from __future__ import annotations

import hashlib
from typing import Any

import redis


def call(client: redis.Redis, *args: Any) -> Any:
    """Send one command and return its raw reply (no response callbacks)."""
    pool = getattr(client, "connection_pool", None)
    if pool is None or getattr(client, "connection", None) is not None or getattr(pool, "cache", None):
        return client.execute_command(*args)
    conn = pool.get_connection()
    try:
        conn.send_command(*args)
        return conn.read_response()
    except redis.ResponseError:
        raise
    except BaseException:
        conn.disconnect()  # a reply may be half read: never hand this connection out again as is
        raise
    finally:
        pool.release(conn)


class LuaScript:
    """A Lua script run by EVALSHA through `call`, loaded on the first NOSCRIPT."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode(), usedforsecurity=False).hexdigest()

    def __call__(self, client: redis.Redis, keys: list[Any], args: list[Any]) -> Any:
        """Run the script on `client`'s server; one round trip unless the server lacks it."""
        try:
            return call(client, "EVALSHA", self.sha, len(keys), *keys, *args)
        except redis.exceptions.NoScriptError:
            call(client, "SCRIPT", "LOAD", self.source)
            return call(client, "EVALSHA", self.sha, len(keys), *keys, *args)
