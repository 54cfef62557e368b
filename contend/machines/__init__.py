"""Hypothesis state machines over the controlled scheduler: one per family.

Each machine drives a few clients of one implementation through operations
whose round trips interleave as Hypothesis chooses, and checks the family's
properties after every step. They are plain RuleBasedStateMachine classes, so
`stateful_tests/` runs them under pytest and `contend check` runs them too.
`contend.machines.family.family_machine` picks the machine for an implementation.
"""
