"""The scheduler's trace: a record per step (which client, what it sent, what came back, at what
virtual time), and how a trace and a schedule read."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from contend.schedule.gating import REAL_MONOTONIC


@dataclass
class TraceEntry:
    """One scheduling step: which client, what it sent, what came back."""

    index: int
    client: str
    sent: list[list[str]]
    replies: list[Any] = field(default_factory=list)
    vtime: float = 0.0
    note: str = ""
    #: The server (host:port) the round trip went to: on a Redis Cluster, which node.
    node: str = ""
    #: The server ran it, but its reply never reached the client, which saw this exception.
    lost: str = ""
    #: This round trip sends again one whose reply was lost (that step's index), and who sent it:
    #: "redis-py's Retry" (the client's own retry settings) or "the code".
    resend_of: int | None = None
    resent_by: str = ""
    #: When (real monotonic seconds) the entry was made, as a step began: what the server did in
    #: it happened after.
    real_start: float = field(default_factory=REAL_MONOTONIC, compare=False, repr=False)

    def describe(self, show_node: bool = False) -> str:
        if self.note:
            return f"#{self.index:<3} {self.client:<4} {self.note}"
        sent = self.sent_text()
        replies = ", ".join(_short(repr(_plain(r))) for r in self.replies)
        where = f" @{self.node}" if show_node and self.node else ""
        text = f"#{self.index:<3} {self.client:<4} {sent}{where}  →  {replies}"
        if self.lost:
            text += f"  ✗ reply lost: the client saw {self.lost}"
        if self.resend_of is not None:
            text += f"  (resent by {self.resent_by} after the reply to #{self.resend_of} was lost)"
        return text

    def sent_text(self) -> str:
        """What the round trip sent, a command after another, each argument cut short."""
        return "; ".join(" ".join(_short(a) for a in cmd) for cmd in self.sent)


_TOKEN = re.compile(r"\b[0-9a-f]{16,}\b|\b\d{9,}\.\d+\b")


def compress(steps: list[TraceEntry], min_repeats: int = 3, show_nodes: bool = False) -> list[str]:
    """Readable lines for `steps`, a block of 1 or 2 steps repeated (a polling loop) shown once."""
    texts = [step.describe(show_nodes) for step in steps]
    # Compare without the "#index" and with random tokens blanked: a retry loop repeats.
    keys = [_TOKEN.sub("…", text.split(None, 1)[1]) if " " in text else text for text in texts]
    lines: list[str] = []
    i = 0
    while i < len(texts):
        for size in (1, 2):
            block = keys[i : i + size]
            repeats = 1
            while keys[i + repeats * size : i + (repeats + 1) * size] == block:
                repeats += 1
            if len(block) == size and repeats >= min_repeats:
                lines += texts[i : i + size]
                lines.append(
                    f"     … the same {'step' if size == 1 else 'two steps'} {repeats - 1} more times"
                )
                i += repeats * size
                break
        else:
            lines.append(texts[i])
            i += 1
    return lines


def schedule_expression(schedule: list[int]) -> str:
    """A schedule as a short Python expression: [1] + [2] * 200."""
    parts: list[str] = []
    i = 0
    while i < len(schedule):
        j = i
        while j < len(schedule) and schedule[j] == schedule[i]:
            j += 1
        parts.append(f"[{schedule[i]}] * {j - i}" if j - i > 3 else repr(schedule[i:j]))
        i = j
    return " + ".join(parts) or "[]"


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode(errors="replace")
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, BaseException):
        # A cluster's redirections by their own names (redis-py keeps only the slot and node).
        prefix = {"MovedError": "MOVED", "AskError": "ASK", "TryAgainError": "TRYAGAIN"}.get(
            type(value).__name__, "ERR"
        )
        return f"{prefix} {value}"
    return value


def _short(text: str, limit: int = 60, head: int = 16) -> str:
    """An argument on one line, at most `limit` characters: a long one keeps its start and its end,
    the part that tells keys apart (`contend:3f2a…:{bank}:acct:a`, not `contend:3f2a…`)."""
    text = " ".join(text.split())  # a script's source on one line
    return text if len(text) <= limit else text[:head] + "…" + text[len(text) - (limit - head - 1) :]


def resends_note(trace: list[Any]) -> str:
    """What the evidence says of round trips sent again after their reply was lost."""
    resent = [step for step in trace if getattr(step, "resend_of", None) is not None]
    if not resent:
        return ""
    which = "; ".join(f"#{s.resend_of} resent as #{s.index} by {s.resent_by}" for s in resent)
    return (
        f" [after a lost reply, a round trip the server had already run was sent again ({which}): "
        "the violation may come from that resend]"
    )


def lost_replies_note(trace: list[Any]) -> str:
    """What the code sent in answer to each lost reply it did not resend: the next round trip of
    the same client in the same operation, or nothing (the operation ended, or raised)."""
    resent = {step.resend_of for step in trace if getattr(step, "resend_of", None) is not None}
    said = []
    for at, step in enumerate(trace):
        if not getattr(step, "lost", "") or step.index in resent:
            continue
        answer = "nothing more in that operation"
        for later in trace[at + 1 :]:
            if later.client != step.client:
                continue
            if later.note:
                if "starts" in later.note:
                    break
                continue
            if later.sent:
                answer = f"#{later.index} {later.sent_text()}"
                break
        said.append(
            f"{step.client}'s reply to #{step.index} was lost ({step.lost}); its code then sent {answer}"
        )
    return f" [{'; '.join(said[:3])}]" if said else ""
