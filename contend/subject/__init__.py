"""The code under test: its protocols, the one loader and capability probe of `MODULE:FACTORY`,
the claims it is held to, and the row (`Subject`) every subsystem runs.

check, stress, load and the Locust harness, the state machines, the scoreboard and
`contend.testing` take the code under test from here and nowhere else.
"""
