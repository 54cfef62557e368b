"""One validator per kind of value a user gives: a whole number > 0, a number > 0, a share
from 0 to 1, a list of whole numbers > 0. The command line (argparse types), `contend load`'s plan and the Locust
harness all ask these, so a bad value gets the same words wherever it is caught."""

from __future__ import annotations

from typing import Any

from contend.errors import ContendError


class BadValue(ContendError):
    """A value that cannot work; the message names the option and what it takes."""


def positive_whole(value: Any, option: str, hint: str = "", error: type[ContendError] = BadValue) -> int:
    """`value` (an int, or text of one) as a whole number > 0; `error` naming `option` otherwise."""
    number = value
    if isinstance(value, str):
        try:
            number = int(value.strip())
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, int) or number <= 0:
        raise error(f"{_named(option)}must be a whole number > 0, got {value!r}{hint}")
    return number


def positive_number(value: Any, option: str, hint: str = "", error: type[ContendError] = BadValue) -> float:
    """`value` (a number, or text of one) as a number > 0; `error` naming `option` otherwise."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not number > 0:
        raise error(f"{_named(option)}must be a number > 0, got {value!r}{hint}")
    return number


def share_of_one(value: Any, option: str, error: type[ContendError] = BadValue) -> float:
    """`value` (a number, or text of one) from 0 to 1; `error` naming `option` otherwise."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        number = float("nan")
    if isinstance(value, bool) or not 0 <= number <= 1:
        raise error(f"{_named(option)}must be a share from 0 to 1 (0.5: half), got {value!r}")
    return number


def whole_list(text: str, option: str, error: type[ContendError] = BadValue) -> list[int]:
    """Whole numbers > 0 separated by commas ("1,2,4"); `error` naming `option` otherwise."""
    parts = [part.strip() for part in str(text).split(",")]
    if not any(parts):
        raise error(f"{option} needs whole numbers > 0 separated by commas, e.g. 1,2,4; got nothing")
    values = []
    for part in parts:
        try:
            number = int(part)
        except ValueError:
            raise error(
                f"{option} needs whole numbers > 0 separated by commas, e.g. 1,2,4; got {text!r}"
            ) from None
        values.append(positive_whole(number, option, error=error))
    return values


def _named(option: str) -> str:
    return f"{option} " if option else ""


#: Catalog family → how the command line and reports spell it (contend.commands.families parses it).
FAMILIES = {
    "lock": "lock",
    "registry": "registry",
    "semaphore": "semaphore",
    "single_flight": "single-flight",
    "transaction": "transaction",
    "queue": "queue",
    "operations": "operations",
    "rate_limiter": "rate-limiter",
}
FAMILY_CHOICES = ", ".join(FAMILIES.values())


def family_label(family: str) -> str:
    """How the command line and reports spell a catalog family."""
    return FAMILIES.get(family, family)
