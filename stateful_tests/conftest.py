"""The gate uses the project-wide fixtures and the `contend-ci` Hypothesis profile (see ../conftest.py)."""
