"""The name→ID registry family (seed 000): one interface, several strategies.

Every strategy keeps the single-database layout of `impl.registry.keys` and
answers `register`, `register_many`, `lookup`, `reverse` and `count`; the
seed's own three-database layout lives in `impl.registry.seed_layout`.
"""

from contend.impl.registry.base import MAX_NAME_BYTES, RegistrationError, Registry, RetriesExhausted
from contend.impl.registry.keys import RegistryKeys
from contend.impl.registry.lock_first import LockFirstRegistry
from contend.impl.registry.lua import LuaRegistry
from contend.impl.registry.naive import NaiveRegistry
from contend.impl.registry.seed_layout import Registerer
from contend.impl.registry.seed_transaction import SeedTransactionRegistry
from contend.impl.registry.watch import WatchRegistry

__all__ = [
    "MAX_NAME_BYTES",
    "LockFirstRegistry",
    "LuaRegistry",
    "NaiveRegistry",
    "Registerer",
    "RegistrationError",
    "Registry",
    "RegistryKeys",
    "RetriesExhausted",
    "SeedTransactionRegistry",
    "WatchRegistry",
]
