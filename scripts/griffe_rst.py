"""griffe extension (mkdocs.yml, mkdocstrings ``extensions:``): the reST of our docstrings as Markdown.

The docstrings are written in the reStructuredText that reads well in a terminal and
in Sphinx (``:func:`name```, ``text::`` before an indented block, ``====`` tables);
mkdocstrings renders docstrings as Markdown. Before rendering, each docstring gets:

- ``:func:`~a.b.c``` (any role) -> `` `c` `` (``~``: the last part) or `` `a.b.c` ``;
- a paragraph ending in ``::`` followed by an indented block -> ``:`` and a fenced
  code block;
- a simple table (``====  ====`` borders) -> a Markdown table.

Only the text handed to the renderer changes; the source stays as it is.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|data|attr|exc|obj|const):`(~?)([^`]+)`")
_BORDER = re.compile(r"^\s*=+(?: +=+)+\s*$")


def _role(m: re.Match[str]) -> str:
    target = m.group(2).strip()
    return f"`{target.rsplit('.', 1)[-1] if m.group(1) else target}`"


def _literal_blocks(lines: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.rstrip().endswith("::") and i + 1 < len(lines) and not lines[i + 1].strip():
            j = i + 1
            while j < len(lines) and not lines[j].strip():
                j += 1
            block: list[str] = []
            while j < len(lines) and (not lines[j].strip() or lines[j].startswith(("    ", "\t"))):
                block.append(lines[j])
                j += 1
            if block:
                while block and not block[-1].strip():
                    block.pop()
                stripped = line.rstrip()[:-2].rstrip()
                out.extend([stripped + ":" if stripped else "", "", "```"])
                out.extend(b[4:] if b.startswith("    ") else b.lstrip("\t") for b in block)
                out.extend(["```", ""])
                i = j
                continue
        out.append(line)
        i += 1
    return out


def _tables(lines: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(lines):
        if not _BORDER.match(lines[i]):
            out.append(lines[i])
            i += 1
            continue
        border = lines[i]
        spans = [(m.start(), m.end()) for m in re.finditer(r"=+", border)]
        rows: list[list[str]] = []
        j, borders = i + 1, 1
        while j < len(lines) and borders < 3:
            if _BORDER.match(lines[j]):
                borders += 1
            elif lines[j].strip():
                cells = [lines[j][a:b if k < len(spans) - 1 else None].strip() for k, (a, b) in enumerate(spans)]
                rows.append(cells)
            j += 1
        if len(rows) >= 2:
            out.append("| " + " | ".join(rows[0]) + " |")
            out.append("|" + "---|" * len(rows[0]))
            out.extend("| " + " | ".join(r) + " |" for r in rows[1:])
            i = j
        else:
            out.append(lines[i])
            i += 1
    return out


def rst_to_markdown(text: str) -> str:
    """The Markdown mkdocstrings renders for docstring ``text`` (see the module docstring)."""
    lines = _ROLE.sub(_role, text).split("\n")
    return "\n".join(_tables(_literal_blocks(lines)))


class RstToMarkdown(griffe.Extension):
    """Rewrite every docstring griffe loads (:func:`rst_to_markdown`)."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        """Called for each object griffe loads."""
        if obj.docstring is not None:
            obj.docstring.value = rst_to_markdown(obj.docstring.value)
