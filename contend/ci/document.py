"""The JSON document every command writes with --json: one envelope, then the command's own fields.

The envelope: `command`, `contend` (the version), `schema` (the file in contend/schemas/
that describes the document), `verdict` (a word), `exit_code` and `exit` (its name in
contend.exitcodes).
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

from contend import __version__, exitcodes


def document(command: str, code: int, verdict: str, **body: Any) -> dict[str, Any]:
    """The envelope every command's JSON shares, then the command's own fields."""
    return {
        "command": command,
        "contend": __version__,
        "schema": f"{command}-result.schema.json",
        "verdict": verdict,
        "exit_code": int(code),
        "exit": exitcodes.name(code),
        **body,
    }


def schema(command: str) -> dict[str, Any]:
    """The JSON Schema of a command's document, as shipped in contend/schemas/."""
    text = resources.files("contend").joinpath("schemas", f"{command}-result.schema.json").read_text()
    loaded: dict[str, Any] = json.loads(text)
    return loaded
