"""`contend scoreboard`: the Python Redis libraries people use (locks, semaphores, queues, rate limiters), judged on what they claim.

`libraries` lists the rows (a library in one documented configuration each), `run` runs them
through the lock battery, `expected` records the verdicts and the findings behind each
failure, and `render` prints the table and writes the report.
"""
