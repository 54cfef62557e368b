"""Load tests: the workloads Locust drives (loadtests/), the sweep behind `contend load`, and their figures.

Only `harness` imports Locust, and only the locustfiles import `harness`:
Locust monkeypatches the standard library with gevent when imported, so it
only ever runs in its own process.
"""
