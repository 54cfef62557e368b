"""Redis locks from the seeds and the correct ones a careful engineer would use.

Every module offers the lock protocol through `factory(client, key, ttl_ms)`;
which ones are known-bad, and why, is said in `impl.catalog`.
"""

from contend.impl.locks.errors import (
    LeaderFailedError,
    LockError,
    LockNotOwnedError,
    LockTimeoutError,
    SingleFlightError,
    SingleFlightTimeout,
    StaleFencingTokenError,
)
from contend.impl.locks.fenced import FencedLock, FencedResource
from contend.impl.locks.semaphore import FairSemaphore, Semaphore
from contend.impl.locks.single_flight import ExclusiveAccess, SingleFlight
from contend.impl.locks.token import TokenLock

__all__ = [
    "ExclusiveAccess",
    "FairSemaphore",
    "FencedLock",
    "FencedResource",
    "LeaderFailedError",
    "LockError",
    "LockNotOwnedError",
    "LockTimeoutError",
    "Semaphore",
    "SingleFlight",
    "SingleFlightError",
    "SingleFlightTimeout",
    "StaleFencingTokenError",
    "TokenLock",
]
