"""Errors the harness reports to a person: each says what was wrong and how to fix it."""


class ContendError(Exception):
    """Base class; the CLI prints the message on one line and exits 2."""


class ServerError(ContendError):
    """The embedded redis-server could not be found, started or stopped."""


class TargetError(ContendError):
    """A --redis-url server cannot be used (unreachable, refused, malformed URL)."""


class NamespaceInUse(ContendError):
    """The run namespace already holds keys on the target server."""


class Abandoned(BaseException):
    """Raised inside work that was abandoned (its time budget ran out, or the run is being
    interrupted), at its next chance. A BaseException: neither the code under test nor
    Hypothesis catches it and carries on."""
