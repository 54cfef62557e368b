"""Errors shared by the locks that follow the contend lock protocol."""


class LockError(Exception):
    """Base class: something went wrong with a lock."""


class LockNotOwnedError(LockError):
    """Release or extend of a lease this client does not hold (never acquired, expired or taken)."""


class LockTimeoutError(LockError):
    """A blocking acquire gave up after its timeout."""
