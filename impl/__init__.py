"""Reference implementations of Redis concurrency primitives: what contend verifies.

Everything here imports only redis-py and the standard library. Which
implementations are correct and which are kept known-bad on purpose is said in
one place: `impl.catalog`.
"""
