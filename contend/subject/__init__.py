"""The code under test: its protocols, the parsed spec of `--impl` and the rules it is held to
(`spec`), the one door that loads, probes and tries it (`resolve`), the claims it is held to, and
the row (`Subject`) every subsystem runs.

check, stress, load and the Locust harness, the state machines, the scoreboard and
`contend.testing` take the code under test from here and nowhere else.
"""
