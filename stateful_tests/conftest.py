"""The gate uses the project-wide fixtures and Hypothesis profiles (see ../conftest.py)."""
