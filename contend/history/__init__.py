"""Recorded histories: records and their formats, the linearizability checker, invariants, timelines."""
