"""Errors shared by the locks that follow the contend lock protocol."""


class LockError(Exception):
    """Base class: something went wrong with a lock."""


class LockNotOwnedError(LockError):
    """Release or extend of a lease this client does not hold (never acquired, expired or taken)."""


class LockTimeoutError(LockError):
    """A blocking acquire gave up after its timeout."""


class StaleFencingTokenError(LockError):
    """A write carried a fencing token lower than one the resource has already seen."""


class SingleFlightError(LockError):
    """Base class of the single-flight errors."""


class LeaderFailedError(SingleFlightError):
    """The leader of a flight raised; its waiters receive this instead of a result."""


class SingleFlightTimeout(SingleFlightError, LockTimeoutError):
    """No result arrived, and no caller could lead, within the wait timeout."""
