"""Family names on the command line: hyphenated (single-flight, like cas-register), the old
underscore spelling accepted with a warning; inside contend they keep their catalog names."""

from __future__ import annotations

import argparse

from contend.commands.arguments import warn_renamed
from contend.values import FAMILIES, FAMILY_CHOICES, family_label

__all__ = ["FAMILIES", "FAMILY_CHOICES", "family_label", "family_name"]


def family_name(text: str) -> str:
    """argparse type: a family as the command line spells it → the catalog's name for it."""
    by_label = {label: family for family, label in FAMILIES.items()}
    if text in by_label:
        return by_label[text]
    if text in FAMILIES:
        warn_renamed(text, FAMILIES[text])
        return text
    raise argparse.ArgumentTypeError(f"unknown family {text!r}; choose one of {FAMILY_CHOICES}")
