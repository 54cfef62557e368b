"""Registry registration: each operation registers a new name (seed 000/003).

Strategies: watch, lock_first, lua (the registry strategies of impl/registry;
the known-bad ones stay out of load runs). `--hot-keys N` spreads the users
over N registries, each with its own id counter. After the run every
registry's ids must be unique and exactly 1..n, with n the registrations that
succeeded. `--impl package.module:factory --kind registry` registers with your
own registry (contend check's registry protocol) instead, on names the users
of one process register at the same moment, and reads it back through its
count, reverse and lookup: ids 1..count, each under one name, tables agreeing.

    locust -f loadtests/registry.py --headless -u 16 -r 16 -t 10s --strategy lock_first
"""

from contend.load.harness import ContendUser


class RegistryUser(ContendUser):
    workload = "registry"
