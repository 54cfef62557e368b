"""Redis locks from the seeds and the correct ones a careful engineer would use."""

from impl.locks.errors import LockError, LockNotOwnedError, LockTimeoutError
from impl.locks.token import TokenLock

__all__ = ["LockError", "LockNotOwnedError", "LockTimeoutError", "TokenLock"]
