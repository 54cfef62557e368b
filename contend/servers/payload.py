"""What a round trip sends, read back as text: the commands of a packed RESP payload (a
command, a pipeline, a MULTI/EXEC block), for traces and for recognising a resend."""

from __future__ import annotations

from typing import Any


def decode_packed(command: Any) -> list[list[str]]:
    """The commands in a packed RESP payload, each as a list of printable strings."""
    if isinstance(command, str):
        command = [command.encode()]
    data = b"".join(bytes(c) for c in command)
    out: list[list[str]] = []
    i = 0
    try:
        while i < len(data):
            if data[i : i + 1] != b"*":
                out.append([data[i:].decode(errors="replace").strip()])
                break
            end = data.index(b"\r\n", i)
            count = int(data[i + 1 : end])
            i = end + 2
            args = []
            for _ in range(count):
                end = data.index(b"\r\n", i)
                size = int(data[i + 1 : end])
                i = end + 2
                args.append(data[i : i + size].decode(errors="replace"))
                i += size + 2
            out.append(args)
    except ValueError:
        out.append(["<undecodable>"])
    return out
