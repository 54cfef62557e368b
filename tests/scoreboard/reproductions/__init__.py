"""Standalone reproductions of the scoreboard's findings: plain redis-py and threads, no contend.

Each script runs on its own (`python tests/scoreboard/reproductions/NAME.py REDIS_URL`) and
exposes `reproduce(url, key)`, which tests/scoreboard/test_reproductions.py runs on an
embedded server.
"""
