"""`--junit-xml FILE`: the results as JUnit XML, the format CI test tabs read.

One <testsuite> per command run, one <testcase> per implementation × check (or per
history file, or per property of a stress run). A failure carries the evidence in its
message and text, as `contend` prints it.
"""

from __future__ import annotations

import socket
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from pathlib import Path

from contend.errors import ContendError


class Outcome(Enum):
    """A testcase's outcome, as JUnit spells it."""

    PASSED = "passed"
    FAILURE = "failure"  # the code under test broke a property
    ERROR = "error"  # no verdict: a budget ran out, or the input was bad
    SKIPPED = "skipped"  # not run (interrupted, or not asked for)


@dataclass(frozen=True)
class Case:
    """One testcase: who (classname), what (name), how long, and how it ended."""

    classname: str
    name: str
    seconds: float
    outcome: Outcome
    message: str = ""
    text: str = ""


def to_xml(suite: str, cases: Sequence[Case]) -> bytes:
    """A <testsuites> document with one <testsuite> named `suite`."""
    counts = {o: sum(c.outcome is o for c in cases) for o in Outcome}
    total = sum(c.seconds for c in cases)
    attrs = {
        "name": suite,
        "tests": str(len(cases)),
        "failures": str(counts[Outcome.FAILURE]),
        "errors": str(counts[Outcome.ERROR]),
        "skipped": str(counts[Outcome.SKIPPED]),
        "time": f"{total:.3f}",
    }
    root = ET.Element("testsuites", attrs)
    ts = ET.SubElement(
        root,
        "testsuite",
        {**attrs, "timestamp": datetime.now(timezone.utc).isoformat(timespec="seconds"), "hostname": _host()},
    )
    for c in cases:
        tc = ET.SubElement(
            ts, "testcase", {"classname": c.classname, "name": c.name, "time": f"{c.seconds:.3f}"}
        )
        if c.outcome is Outcome.PASSED:
            if c.text:
                ET.SubElement(tc, "system-out").text = _clean(c.text)
            continue
        child = ET.SubElement(tc, c.outcome.value, {"message": _clean(c.message)[:1000]})
        if c.outcome is not Outcome.SKIPPED:
            child.set("type", c.outcome.value)
        child.text = _clean(c.text or c.message)
    ET.indent(root)
    return ET.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


def write_junit(path: str | Path | None, suite: str, cases: Sequence[Case]) -> None:
    """Write the document to `path` (nothing when None)."""
    if path is None:
        return
    p = Path(path)
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(to_xml(suite, cases))
    except OSError as exc:
        raise ContendError(
            f"--junit-xml {p}: cannot write it ({exc.strerror or exc}); choose another path"
        ) from None


def _clean(text: str) -> str:
    """XML 1.0 has no place for most control characters: drop them."""
    return "".join(ch for ch in text if ch in "\t\n\r" or ord(ch) >= 0x20)


def _host() -> str:
    try:
        return socket.gethostname()
    except OSError:
        return "localhost"
