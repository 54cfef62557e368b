"""Load tests: the workloads Locust drives (loadtests/), the sweep behind `contend load`, and their figures.

Nothing here imports Locust: Locust monkeypatches the standard library with
gevent when imported, so it only ever runs in its own process.
"""
