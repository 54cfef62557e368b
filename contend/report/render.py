"""A report as a list of blocks, written out twice: Markdown (for a CI step summary) and self-contained HTML."""

from __future__ import annotations

import base64
import html
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Heading:
    text: str
    level: int = 2


@dataclass(frozen=True)
class Para:
    text: str  # may hold `code` spans


@dataclass(frozen=True)
class Table:
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    align: str = ""  # one letter per column, l or r


@dataclass(frozen=True)
class Image:
    path: Path
    alt: str


@dataclass(frozen=True)
class Code:
    text: str  # shown as is, in a monospaced block


Block = Heading | Para | Table | Image | Code


def markdown(blocks: list[Block], *, images: bool = True) -> str:
    """GitHub-flavoured Markdown; images are linked by file name (they sit beside report.md), or,
    with `images=False` (a CI step summary, which cannot show local files), named in text."""
    out: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            out.append("#" * block.level + " " + block.text)
        elif isinstance(block, Para):
            out.append(block.text)
        elif isinstance(block, Table):
            align = block.align or "l" * len(block.header)
            out.append("| " + " | ".join(_md_cell(c) for c in block.header) + " |")
            out.append("|" + "|".join("---:" if a == "r" else "---" for a in align) + "|")
            out.extend("| " + " | ".join(_md_cell(c) for c in row) + " |" for row in block.rows)
        elif isinstance(block, Code):
            out.append("```\n" + block.text.rstrip("\n") + "\n```")
        elif images:
            out.append(f"![{block.alt}]({block.path.name})")
        else:
            out.append(f"*plot: {block.alt} ({block.path.name} in the HTML report)*")
        out.append("")
    return "\n".join(out)


def _md_cell(text: str) -> str:
    return text.replace("|", "\\|")


STYLE = """
body { font-family: system-ui, sans-serif; max-width: 1300px; margin: 2em auto; padding: 0 1em; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.92em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; }
th { background: #f3f3f3; }
td.r, th.r { text-align: right; }
code { background: #f3f3f3; padding: 0 0.2em; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 0.88em; }
img { max-width: 100%; display: block; margin: 0.5em 0 1.5em; }
"""


def html_page(title: str, blocks: list[Block]) -> str:
    """One HTML file with every plot embedded as a data: URI."""
    body: list[str] = []
    for block in blocks:
        if isinstance(block, Heading):
            body.append(f"<h{block.level}>{html.escape(block.text)}</h{block.level}>")
        elif isinstance(block, Para):
            body.append(f"<p>{_inline(block.text)}</p>")
        elif isinstance(block, Table):
            align = block.align or "l" * len(block.header)
            head = "".join(
                f'<th class="{a}">{_inline(c)}</th>' for c, a in zip(block.header, align, strict=True)
            )
            rows = "".join(
                "<tr>"
                + "".join(f'<td class="{a}">{_inline(c)}</td>' for c, a in zip(row, align, strict=True))
                + "</tr>"
                for row in block.rows
            )
            body.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table>")
        elif isinstance(block, Code):
            body.append(f"<pre>{html.escape(block.text)}</pre>")
        else:
            data = base64.b64encode(block.path.read_bytes()).decode()
            body.append(f'<img alt="{html.escape(block.alt)}" src="data:image/png;base64,{data}">')
    return (
        f'<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{STYLE}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n"
    )


def _inline(text: str) -> str:
    """Escape, then turn `code` spans and **bold** into tags."""
    parts = html.escape(text).split("`")
    out = []
    for i, part in enumerate(parts):
        if i % 2:
            out.append(f"<code>{part}</code>")
        else:
            bold = part.split("**")
            out.append("".join(f"<b>{b}</b>" if j % 2 else b for j, b in enumerate(bold)))
    return "".join(out)
