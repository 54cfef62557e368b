"""Adapters: the Python Redis libraries people use, behind contend's protocols.

One module per library, each a factory `factory(client, key, ttl_ms)` that uses
the library's own API the way its documentation says (its own sleep, blocking
and expiry options, TTLs converted exactly, thread-locality respected). Each
module's docstring says what the library claims and how contend's arguments
map to it. `contend.scoreboard.libraries` lists them for `contend scoreboard`;
the libraries install with `pip install 'contend[libs]'`.
"""
